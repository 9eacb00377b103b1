"""The job engine: replicas started, watched, restarted and stopped, by Vertex's failure rules."""
