"""The Model Registry: ModelService and its records, versions, aliases and the model id rule."""
