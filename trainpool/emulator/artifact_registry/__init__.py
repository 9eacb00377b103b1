"""Artifact Registry: its service, repositories and the Docker images pushed to them."""
