"""Artifact Registry repositories as records, and what a push to one would meet on Google Cloud.

The service (:mod:`trainpool.emulator.api.artifact_registry`) keeps repositories here; the
local Cloud Build (:mod:`trainpool.emulator.builds.build_runs`) asks :func:`push_problem`
before it pushes an image, so a build that pushes to a repository never created says that
Google Cloud would refuse it.
"""

from __future__ import annotations

import re

from google.cloud.artifactregistry_v1.types import repository as ar

from trainpool.emulator.records.kinds import Kind
from trainpool.emulator.state import EmulatorState

REPOSITORIES = Kind("repositories", ar.Repository, "Repository")
_HOST = re.compile(r"([a-z0-9-]+)-docker\.pkg\.dev")


def repository_of(image: str) -> str | None:
    """The repository a Docker image name of Artifact Registry names
    (``LOCATION-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE[:TAG|@DIGEST]`` ->
    ``projects/PROJECT/locations/LOCATION/repositories/REPOSITORY``), or None for any other
    image name."""
    host, _, path = image.partition("/")
    match = _HOST.fullmatch(host)
    if match is None:
        return None
    parts = path.split("@", 1)[0].split("/")
    if parts and "." in parts[0] and len(parts) > 1:  # a domain-scoped project: example.com/p
        parts = [f"{parts[0]}:{parts[1]}", *parts[2:]]
    if len(parts) < 3 or not all(parts):
        return None
    return f"projects/{parts[0]}/locations/{match.group(1)}/repositories/{parts[1]}"


def push_problem(state: EmulatorState, image: str) -> str | None:
    """What a push of ``image`` would meet on Google Cloud and not here: its Artifact
    Registry repository was not created (Google answers "name unknown: Repository ...
    not found"), or holds another format than Docker. None when nothing (or the image is not
    an Artifact Registry name)."""
    name = repository_of(image)
    if name is None:
        return None
    found = state.records.get(REPOSITORIES, name)
    _, project, _, location, _, repository_id = name.split("/")
    if found is None:
        return (
            f"WARNING: {image}: repository {name} was not created in the emulator, so on "
            f'Google Cloud this push fails (name unknown: Repository "{repository_id}" not '
            "found); pushed to the local image store anyway. Create it first: gcloud artifacts "
            f"repositories create {repository_id} --repository-format=docker "
            f"--location={location} --project={project}"
        )
    if found.format_ != ar.Repository.Format.DOCKER:
        return (
            f"WARNING: {image}: repository {name} is a {found.format_.name} repository, so on "
            "Google Cloud this Docker push fails; pushed to the local image store anyway"
        )
    return None
