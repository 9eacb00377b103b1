"""PipelineJobs run locally, and TrainingPipelines run by a backing CustomJob."""
