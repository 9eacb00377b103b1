"""Training images: Dockerfile, build context and its digest, backends, one entry point.

``dockerfile`` writes the Dockerfile for a trainer folder, ``context`` gathers the
files Docker would see and digests them, ``image_store`` keeps images offline,
``cloud_build`` builds on Google Cloud, ``builder`` builds or skips one request on
one backend, and ``service.build_image`` is the entry point that chooses the backend.
"""
