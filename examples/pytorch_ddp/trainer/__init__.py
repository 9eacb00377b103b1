"""PyTorch DDP example trainer for Vertex AI (run as ``python -m trainer.task``)."""
