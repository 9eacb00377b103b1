"""TensorFlow MultiWorkerMirroredStrategy example trainer (run as ``python -m trainer.task``)."""
