"""Cloud Build, emulated: builds run into the local image store."""
