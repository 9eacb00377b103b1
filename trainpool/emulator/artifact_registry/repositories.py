"""Artifact Registry repositories and the Docker images pushed to them, as records, and what a
push would meet on Google Cloud.

The service (:mod:`trainpool.emulator.artifact_registry.artifact_registry`) keeps
repositories here; the local Cloud Build (:mod:`trainpool.emulator.builds.build_runs`) asks
:func:`push_problem` before it pushes an image, so a build that pushes to a repository never
created says that Google Cloud would refuse it. A ``docker push`` under ``trainpool exec``
(:mod:`trainpool.redirect.docker`) and a build on the container engine record the image
with :func:`record_push`: the engine keeps the image itself, the record is what Artifact
Registry answers about it (``gcloud artifacts docker images list``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote, unquote

from google.cloud.artifactregistry_v1.types import artifact
from google.cloud.artifactregistry_v1.types import repository as ar

from trainpool.emulator.records.kinds import Kind
from trainpool.emulator.records.resources import AlreadyExists
from trainpool.emulator.state import EmulatorState

REPOSITORIES = Kind("repositories", ar.Repository, "Repository")
DOCKER_IMAGES = Kind("dockerImages", artifact.DockerImage, "DockerImage")
_HOST = re.compile(r"([a-z0-9-]+)-docker\.pkg\.dev")
GCR_HOSTS = {"gcr.io": "us", "us.gcr.io": "us", "eu.gcr.io": "europe", "asia.gcr.io": "asia"}
"""Container Registry's hosts and the multi-region of the Artifact Registry repository that
serves each, named as the host (https://cloud.google.com/artifact-registry/docs/transition/
gcr-repositories)."""
MANIFEST_TYPE = "application/vnd.docker.distribution.manifest.v2+json"


class PushRefused(Exception):
    """A push Artifact Registry refuses; the message is its words."""


@dataclass(frozen=True)
class ImageName:
    """A Docker image name of Artifact Registry or Container Registry, read."""

    repository: str
    """``projects/PROJECT/locations/LOCATION/repositories/REPOSITORY``."""
    prefix: str
    """What comes before the image's own path: ``LOCATION-docker.pkg.dev/PROJECT/REPO``,
    ``gcr.io/PROJECT``."""
    package: str
    """The image's path in its repository (``trainer``, ``team/trainer``)."""
    tag: str
    """The tag named ("" for none)."""
    digest: str
    """The digest named (``sha256:...``; "" for none)."""

    @property
    def gcr(self) -> bool:
        return self.repository.rsplit("/", 1)[1] in GCR_HOSTS


def read_image_name(image: str) -> ImageName | None:
    """``image`` read as Artifact Registry reads it (``LOCATION-docker.pkg.dev/PROJECT/
    REPOSITORY/IMAGE[:TAG][@DIGEST]``, or a Container Registry host's ``HOST/PROJECT/IMAGE``,
    served by the ``HOST`` repository); None for any other registry's name."""
    host, _, path = image.partition("/")
    named, _, digest = path.partition("@")
    last = named.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    if tag:
        named = named[: -len(tag) - 1]
    parts = named.split("/")
    if parts and "." in parts[0] and len(parts) > 1:  # a domain-scoped project: example.com/p
        parts = [f"{parts[0]}:{parts[1]}", *parts[2:]]
    match = _HOST.fullmatch(host)
    if match is not None and len(parts) >= 3 and all(parts):
        project, repository, package = parts[0], parts[1], "/".join(parts[2:])
        location = match.group(1)
    elif host in GCR_HOSTS and len(parts) >= 2 and all(parts):
        project, repository, package = parts[0], host, "/".join(parts[1:])
        location = GCR_HOSTS[host]
    else:
        return None
    given = named.split("/")
    prefix = "/".join([host, *given[: len(given) - len(package.split("/"))]])
    return ImageName(
        f"projects/{project}/locations/{location}/repositories/{repository}",
        prefix,
        package,
        tag,
        digest,
    )


def repository_of(image: str) -> str | None:
    """The repository a Docker image name of Artifact Registry names
    (``LOCATION-docker.pkg.dev/PROJECT/REPOSITORY/IMAGE[:TAG|@DIGEST]`` ->
    ``projects/PROJECT/locations/LOCATION/repositories/REPOSITORY``), or None for any other
    image name."""
    read = read_image_name(image)
    return None if read is None or read.gcr else read.repository


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


def record_push(
    state: EmulatorState,
    image: str,
    image_id: str,
    size_bytes: int = 0,
    built: datetime | None = None,
) -> artifact.DockerImage:
    """Record that ``image`` (``NAME:TAG``; no tag: ``latest``) was pushed as the engine's
    image ``image_id`` (``sha256:...``): the repository's DockerImage of that digest gets the
    tag, which leaves any other image of the same path, as a pushed tag moves on Artifact
    Registry. A Container Registry host's repository is made on the first push (as
    ``gcr.io`` repositories are for a project that used Container Registry); an Artifact
    Registry repository never created refuses the push with Google's words
    (:class:`PushRefused`), as does one of another format.

    How it differs: the digest is the image's id (its config's digest), not the digest of a
    registry manifest (which the engine makes only when it uploads compressed layers)."""
    read = read_image_name(image)
    if read is None:
        raise PushRefused(f"{image}: not an Artifact Registry or Container Registry image name")
    if read.digest:
        raise PushRefused(f"{image}: a push names a tag, not a digest")
    tag = read.tag or "latest"
    found = state.records.get(REPOSITORIES, read.repository)
    repository_id = read.repository.rsplit("/", 1)[1]
    now = state.clock.now()
    if found is None and read.gcr:
        made = ar.Repository(
            name=read.repository,
            format_=ar.Repository.Format.DOCKER,
            mode=ar.Repository.Mode.STANDARD_REPOSITORY,
            description=f"{repository_id}: made on the first push, as Container Registry did",
            create_time=now,
            update_time=now,
            registry_uri=read.prefix,
        )
        try:
            state.records.insert(REPOSITORIES, read.repository.rsplit("/repositories/")[0], made)
        except AlreadyExists:
            pass
        found = made
    if found is None:
        raise PushRefused(f'name unknown: Repository "{repository_id}" not found')
    if found.format_ != ar.Repository.Format.DOCKER:
        raise PushRefused(
            f"denied: {read.repository} is a {found.format_.name} repository, not DOCKER"
        )
    return _tag_image(state, read, tag, image_id, size_bytes, built, now)


def _tag_image(
    state: EmulatorState,
    read: ImageName,
    tag: str,
    image_id: str,
    size_bytes: int,
    built: datetime | None,
    now: datetime,
) -> artifact.DockerImage:
    """The DockerImage ``image_id`` of ``read``'s package, stored with ``tag`` (made, or
    tagged when it exists), the tag taken from any other image of that package first."""
    name = f"{read.repository}/dockerImages/{quote(read.package, safe='')}@{image_id}"
    for other in all_images(state, read.repository):
        if other.name != name and tag in other.tags and package_of(other) == read.package:
            state.records.update(DOCKER_IMAGES, other.name, lambda r: _untag(r, tag, now))

    def tagged(record: artifact.DockerImage) -> None:
        if tag not in record.tags:
            record.tags.append(tag)
        record.update_time = now
        record.upload_time = now

    record = artifact.DockerImage(
        name=name,
        uri=f"{read.prefix}/{read.package}@{image_id}",
        tags=[tag],
        image_size_bytes=size_bytes,
        upload_time=now,
        update_time=now,
        media_type=MANIFEST_TYPE,
    )
    if built is not None:
        record.build_time = built
    try:
        return state.records.insert(DOCKER_IMAGES, read.repository, record)  # type: ignore[no-any-return]
    except AlreadyExists:
        return state.records.update(DOCKER_IMAGES, name, tagged)  # type: ignore[no-any-return]


def all_images(state: EmulatorState, repository: str) -> list[artifact.DockerImage]:
    """Every DockerImage of ``repository``, in push order."""
    found: list[artifact.DockerImage] = []
    token = ""
    while True:
        page, token = state.records.page(
            DOCKER_IMAGES, repository, page_size=1000, page_token=token
        )
        found.extend(page)
        if not token:
            return found


def pushed(state: EmulatorState, image: str) -> artifact.DockerImage | None:
    """The DockerImage ``image`` names (by digest, else by tag; no tag: ``latest``), or None
    when it was never pushed here."""
    read = read_image_name(image)
    if read is None:
        return None
    for record in all_images(state, read.repository):
        if package_of(record) != read.package:
            continue
        if read.digest:
            if record.name.endswith("@" + read.digest):
                return record
        elif (read.tag or "latest") in record.tags:
            return record
    return None


def package_of(record: artifact.DockerImage) -> str:
    """The image path of a DockerImage record (``team/trainer``)."""
    return unquote(record.name.rsplit("/dockerImages/", 1)[1].rsplit("@", 1)[0])


def _untag(record: artifact.DockerImage, tag: str, now: datetime) -> None:
    kept = [t for t in record.tags if t != tag]
    del record.tags[:]
    record.tags.extend(kept)
    record.update_time = now


def unpushed(state: EmulatorState, image: str) -> str:
    """What a job log says of ``image`` when it names Artifact Registry or Container Registry
    and was never pushed to the emulator's ("" when it was, or names another registry): the
    engine has it, so it runs, but Vertex AI pulls from the registry and would fail."""
    read = read_image_name(image)
    if read is None:
        return ""
    named = image.split("@", 1)[0] if read.tag else image  # NAME:TAG@ID: the tag is the name
    if pushed(state, named) is not None:
        return ""
    return (
        f"WARNING: {named} was not pushed to the emulator's Artifact Registry: it runs from the "
        "local container engine, which has it, but on Vertex AI the job fails to pull it "
        f"(push it first: docker push {named}, under trainpool exec)"
    )
