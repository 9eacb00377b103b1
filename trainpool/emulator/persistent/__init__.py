"""Persistent resources: Vertex's reserved clusters, their rules, and the jobs that run on them."""
