"""HyperparameterTuningJobs: trials as CustomJobs, their parameters and their rules."""
