"""Reproducible training images: Dockerfile, build context and its digest, backends.

``dockerfile`` writes the Dockerfile for a trainer folder, ``context`` gathers the
files Docker would see and digests them, ``local_store`` keeps images offline,
and ``builder`` picks a backend (Docker engine, local store, or Cloud Build).
"""
