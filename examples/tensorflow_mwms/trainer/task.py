"""Train a small Keras classifier with MultiWorkerMirroredStrategy across a Vertex job.

Run as ``python -m trainer.task [--epochs 2] [--lr 0.1] [--batch_size 64]``. The strategy
reads TF_CONFIG (set by Vertex, or by trainpool's emulator locally). Every worker
trains on the same seeded synthetic data, sharded by the strategy; the chief reports
``loss`` and ``accuracy`` after every epoch (cloudml-hypertune format); every worker
saves the model, the chief to AIP_MODEL_DIR and the others to temporary directories
that are removed afterwards (the MultiWorkerMirroredStrategy save rule).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from trainpool import runtime
from trainpool.runtime import hypertune, paths
from trainpool.runtime import tf as rt_tf
from trainpool.runtime.args import parse_hyperparameters

DEFAULTS = {"epochs": 2, "lr": 0.1, "batch_size": 64, "output_dir": "./outputs"}
FEATURES, CLASSES, SAMPLES, SEED = 32, 4, 4096, 1234


def dataset(global_batch: int) -> tf.data.Dataset:
    """Gaussian inputs labelled by a fixed random linear teacher, sharded by example."""
    rng = np.random.default_rng(SEED)
    inputs = rng.standard_normal((SAMPLES, FEATURES)).astype("float32")
    labels = (inputs @ rng.standard_normal((FEATURES, CLASSES))).argmax(axis=1)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    data = tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(global_batch)
    return data.with_options(options)


def model() -> tf.keras.Model:
    """A two-layer MLP, initialised identically on every worker."""
    tf.keras.utils.set_random_seed(SEED)
    return tf.keras.Sequential(
        [
            tf.keras.Input(shape=(FEATURES,)),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(CLASSES),
        ]
    )


def train(strategy: Any, net: tf.keras.Model, lr: float, global_batch: int) -> Any:
    """A custom distributed loop (Keras 3's ``fit`` cannot run MultiWorkerMirroredStrategy,
    keras-team/keras#20585); returns a function that runs one epoch and gives
    ``(loss, accuracy)`` over the whole global dataset."""
    with strategy.scope():
        optimizer = tf.keras.optimizers.SGD(learning_rate=lr)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def step(inputs: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape() as tape:
            logits = net(inputs, training=True)
            per_example = loss_fn(labels, logits)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
        grads = tape.gradient(loss, net.trainable_variables)
        optimizer.apply_gradients(zip(grads, net.trainable_variables, strict=True))
        hits = tf.cast(tf.argmax(logits, axis=1) == tf.cast(labels, tf.int64), tf.float32)
        return tf.reduce_sum(per_example), tf.reduce_sum(hits)

    @tf.function
    def distributed_step(inputs: tf.Tensor, labels: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        loss_sum, hits = strategy.run(step, args=(inputs, labels))
        total = tf.distribute.ReduceOp.SUM
        return strategy.reduce(total, loss_sum, None), strategy.reduce(total, hits, None)

    data = strategy.experimental_distribute_dataset(dataset(global_batch))

    def epoch() -> tuple[float, float]:
        loss_sum, hits = 0.0, 0.0
        for inputs, labels in data:
            batch_loss, batch_hits = distributed_step(inputs, labels)
            loss_sum += float(batch_loss)
            hits += float(batch_hits)
        return loss_sum / SAMPLES, hits / SAMPLES

    return epoch


def main(argv: Sequence[str] | None = None) -> int:
    hp = parse_hyperparameters(DEFAULTS, argv, description=__doc__ or "")
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    ctx = runtime.context()
    global_batch = hp["batch_size"] * strategy.num_replicas_in_sync
    with strategy.scope():
        net = model()
    run_epoch = train(strategy, net, hp["lr"], global_batch)
    for number in range(1, hp["epochs"] + 1):
        loss, accuracy = run_epoch()
        print(
            f"{ctx.replica_name} epoch {number}: loss={loss:.4f} accuracy={accuracy:.4f}",
            flush=True,
        )
        if ctx.is_chief:
            hypertune.report_metric("loss", loss, number)
            hypertune.report_metric("accuracy", accuracy, number)
    model_dir = paths.job_dir("model", ctx, hp["output_dir"])
    written = rt_tf.save_model(net, os.path.join(model_dir, "model.keras"), strategy)
    print(f"{ctx.replica_name} saved to {written}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
