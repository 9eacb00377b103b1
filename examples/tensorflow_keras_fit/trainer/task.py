"""Keras ``model.fit`` under MultiWorkerMirroredStrategy, as in Google's multi-worker article.

Run as ``python -m trainer.task [--epochs 2] [--batch-size 64]`` on every replica. The
strategy reads TF_CONFIG (set by Vertex, or by trainpool's emulator locally); Keras 2
(``tf_keras``, selected by ``TF_USE_LEGACY_KERAS=1`` before TensorFlow is imported) runs
``fit`` across the workers. Every worker saves the model (saving has collective ops): the
chief to ``AIP_MODEL_DIR``, the others to a ``workertemp_<task id>`` directory beside it,
which they delete afterwards (the seed's ``write_filepath`` rule).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # before tensorflow: tf.keras is tf_keras

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from trainpool.runtime.gcs import local_path  # noqa: E402

FEATURES, CLASSES, SAMPLES, SEED = 32, 4, 2048, 1234


def get_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2, help="number of training epochs")
    parser.add_argument("--batch-size", type=int, default=64, help="per-replica batch size")
    return parser.parse_args()


def create_dataset(global_batch_size: int) -> tf.data.Dataset:
    """Gaussian inputs labelled by a fixed random linear teacher; sharded by example."""
    rng = np.random.default_rng(SEED)
    inputs = rng.standard_normal((SAMPLES, FEATURES)).astype("float32")
    labels = (inputs @ rng.standard_normal((FEATURES, CLASSES))).argmax(axis=1)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    data = tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(global_batch_size)
    return data.with_options(options)


def create_model() -> tf.keras.Model:
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Input(shape=(FEATURES,)),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(CLASSES),
        ]
    )
    model.compile(
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=tf.keras.optimizers.Adam(0.01),
        metrics=["accuracy"],
    )
    return model


def _is_chief(task_type: str | None, task_id: int | None) -> bool:
    # A `chief` task is in TF_CONFIG (Vertex's pool 0); a single process has no task type.
    return task_type == "chief" or task_type is None


def write_filepath(filepath: str, task_type: str | None, task_id: int | None) -> str:
    """The chief writes to ``filepath``; another worker to ``workertemp_<id>/`` beside it."""
    dirpath, base = os.path.split(filepath.rstrip("/"))
    if not _is_chief(task_type, task_id):
        dirpath = os.path.join(dirpath, f"workertemp_{task_id}")
        tf.io.gfile.makedirs(dirpath)
    return os.path.join(dirpath, base)


def main() -> None:
    args = get_args()
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    global_batch_size = args.batch_size * strategy.num_replicas_in_sync
    with strategy.scope():
        model = create_model()
    model.fit(create_dataset(global_batch_size), epochs=args.epochs, verbose=2)

    task_type, task_id = (strategy.cluster_resolver.task_type, strategy.cluster_resolver.task_id)
    model_dir = local_path(os.environ.get("AIP_MODEL_DIR", "./outputs/model"))
    write_model_path = write_filepath(model_dir, task_type, task_id)
    model.save(write_model_path)
    if not _is_chief(task_type, task_id):
        tf.io.gfile.rmtree(os.path.dirname(write_model_path))
    print(f"{task_type}-{task_id} saved to {write_model_path}", flush=True)


if __name__ == "__main__":
    main()
