"""A job's TensorBoard uploader: the Vertex AI SDK's own, run as Vertex's training service runs
it beside a job whose ``CustomJobSpec.tensorboard`` is set.

``python uploader_process.py --tensorboard NAME --experiment ID --logdir DIR`` builds the
SDK's ``TensorBoardUploader`` as ``aiplatform.start_upload_tb_log`` does
(``tensorboard/uploader_tracker.py``: the Tensorboard's blob bucket and folder, every
allowed plugin, ``create_experiment()``), then runs the loop of its ``start_uploading()``
(a logdir poll at most once a second, one upload cycle each) until its standard input
closes, which the emulator does when the job's replicas have ended (or dies); then one
last cycle, so what the trainer wrote last is uploaded too, and the experiment's runs are
ended, as ``_end_uploading`` ends them. Its clients reach the emulator through the site
hook on its ``PYTHONPATH``.

The SDK's uploader imports ``tensorflow`` for type annotations only; where TensorFlow is
not installed (TensorBoard alone, the ``tensorboard`` extra), TensorBoard's own stand-in
for it (``tensorboard.compat.tensorflow_stub``, with which TensorBoard reads event files
without TensorFlow) is that module, its ``compat.v1`` given the three protos those
annotations name (``Event``, ``Summary``, ``SummaryMetadata``). Self-contained: no
trainpool import.
"""

from __future__ import annotations

import argparse
import sys
import threading


def _tensorflow_for_annotations() -> None:
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        from tensorboard.compat import tensorflow_stub
        from tensorboard.compat.proto import event_pb2, summary_pb2

        v1 = tensorflow_stub.compat.v1
        v1.Event = event_pb2.Event
        v1.Summary = summary_pb2.Summary
        v1.SummaryMetadata = summary_pb2.SummaryMetadata
        sys.modules["tensorflow"] = tensorflow_stub  # TensorBoard's own reader uses it too


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tensorboard", required=True)
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--display-name", default="")
    parser.add_argument("--logdir", required=True)
    args = parser.parse_args(argv)
    _tensorflow_for_annotations()
    from google.cloud import aiplatform
    from google.cloud.aiplatform import initializer
    from google.cloud.aiplatform.tensorboard import uploader_constants, uploader_utils
    from google.cloud.aiplatform.tensorboard.uploader import TensorBoardUploader
    from google.cloud.aiplatform.utils import TensorboardClientWithOverride

    _, project, _, location, *_ = args.tensorboard.split("/")
    aiplatform.init(project=project, location=location)
    client = initializer.global_config.create_client(
        client_class=TensorboardClientWithOverride, location_override=location
    )
    found = uploader_utils.get_blob_storage_bucket_and_folder(client, args.tensorboard, project)
    assert found is not None  # it raises rather than answer None
    bucket, folder = found
    uploader = TensorBoardUploader(
        experiment_name=args.experiment,
        tensorboard_resource_name=args.tensorboard,
        experiment_display_name=args.display_name or None,
        blob_storage_bucket=bucket,
        blob_storage_folder=folder,
        allowed_plugins=uploader_constants.ALLOWED_PLUGINS,
        writer_client=client,
        logdir=args.logdir,
        one_shot=False,
        verbosity=0,
    )
    uploader.create_experiment()
    print(f"uploading {args.logdir} to {uploader.get_experiment_resource_name()}", flush=True)
    ended = threading.Event()

    def wait_for_the_end() -> None:
        sys.stdin.read()
        ended.set()

    threading.Thread(target=wait_for_the_end, daemon=True).start()
    while not ended.is_set():  # start_uploading()'s loop, until the job's replicas end
        uploader._logdir_poll_rate_limiter.tick()
        uploader._upload_once()
    uploader._upload_once()  # what was written since the last cycle
    uploader._end_experiment_runs()
    print("uploaded; the job's replicas have ended", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
