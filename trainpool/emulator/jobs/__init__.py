"""The job engine: replicas started, watched, restarted and terminated by Vertex's failure rules."""
