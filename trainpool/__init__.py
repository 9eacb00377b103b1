"""trainpool: KFP v2 components and pipelines for distributed training on Vertex AI."""

__version__ = "0.1.0"
