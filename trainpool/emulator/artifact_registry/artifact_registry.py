"""``google.devtools.artifactregistry.v1.ArtifactRegistry``: repositories, recorded.

Google's training notebooks create a Docker repository before their first build
(``gcloud artifacts repositories create REPO --repository-format=docker
--location=us-central1``); under ``trainpool exec`` that reaches this service (the REST door,
``artifactregistry.googleapis.com``). CreateRepository, GetRepository, ListRepositories,
UpdateRepository and DeleteRepository are served (:mod:`trainpool.emulator.standard_methods`,
the repositories declared to it, kept by :class:`Repositories`); repositories are records of
the root (:mod:`trainpool.emulator.records.resources`, kind :data:`REPOSITORIES`), so a
restarted emulator keeps them. GetDockerImage, ListDockerImages (``gcloud artifacts docker
images list LOCATION-docker.pkg.dev/PROJECT/REPO``) and ListVersions (``... REPO/IMAGE``,
:func:`package_versions`) answer the images pushed there: a ``docker
push`` under ``trainpool exec`` (:mod:`trainpool.redirect.docker`) or a Cloud Build on the
container engine records one (:func:`trainpool.emulator.artifact_registry.repositories.record_push`;
the image itself stays in the engine, which is this machine's registry). A build without an
engine still puts its image in the local image store
(:mod:`trainpool.emulator.builds.build_runs`), whose log says when a push names a repository
that was not created (:func:`push_problem`: on Google Cloud that push fails). Every other
method of the API answers UNIMPLEMENTED naming it.

As the API behaves (https://cloud.google.com/artifact-registry/docs/reference/rest/v1/projects.locations.repositories):

- a repository is ``projects/PROJECT/locations/LOCATION/repositories/REPOSITORY``;
  REPOSITORY follows Artifact Registry's naming rule (lowercase letters, digits and hyphens,
  starting with a letter and ending with a letter or digit, at most 63 characters:
  https://cloud.google.com/artifact-registry/docs/repositories/create-repos; gcloud checks
  the same rule, without the length, before it sends: ``_REPO_REGEX`` of its
  ``command_lib/artifacts/util.py``); LOCATION a Vertex AI region of the emulator's catalog
  (:func:`trainpool.emulator.api.requests.check_parent`) or one of Artifact Registry's
  multi-regions (:data:`MULTI_REGIONS`,
  https://cloud.google.com/artifact-registry/docs/repositories/repo-locations);
- Create and Delete answer a long-running operation
  (``projects/P/locations/L/operations/ID``, what gcloud polls), done at once: Create's
  response is the Repository, Delete's ``Empty``; a second Create of the same name answers
  ALREADY_EXISTS "the repository already exists" (Google's words, as gcloud prints them);
- a repository keeps ``format`` (required here: FORMAT_UNSPECIFIED is refused), ``mode``
  (STANDARD_REPOSITORY when not given), description, labels (Google's label rules), every
  other field sent, ``create_time`` and ``update_time`` from the emulator's clock, and
  ``registry_uri`` (``LOCATION-FORMAT.pkg.dev/PROJECT/REPOSITORY``);
- UpdateRepository changes the fields its ``update_mask`` names, of :data:`UPDATABLE`
  (an empty mask: those of them the request sets) and answers the Repository.

Where the emulator differs: ListRepositories' ``filter`` and ``order_by`` are refused
(INVALID_ARGUMENT; gcloud then filters and sorts itself, its ``RetryOnInvalidArguments``);
repositories are listed in creation order.
"""

from __future__ import annotations

import re
from typing import Any, cast
from urllib.parse import unquote

from google.cloud.artifactregistry_v1.types import artifact, tag, version
from google.cloud.artifactregistry_v1.types import repository as ar
from google.cloud.artifactregistry_v1.types import service as ar_service
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, already_exists, not_found, service
from trainpool.emulator.artifact_registry.repositories import (
    DOCKER_IMAGES,
    GCR_HOSTS,
    REPOSITORIES,
    all_images,
    package_of,
)
from trainpool.emulator.records.kinds import Kind
from trainpool.emulator.records.operations import pack
from trainpool.emulator.records.resources import AlreadyExists, Records
from trainpool.emulator.standard_methods import Resource, ResourceRecords, methods
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief

SERVICE = "google.devtools.artifactregistry.v1.ArtifactRegistry"
REPOSITORY_ID = re.compile(r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?")
REPOSITORY_RULE = (
    "lowercase letters, digits and hyphens, starting with a letter and ending with a letter "
    "or digit, at most 63 characters"
)
MULTI_REGIONS = ("asia", "europe", "us")
UPDATABLE = ("description", "labels")
ALREADY_EXISTS = "the repository already exists"
NOT_FOUND = "Requested entity was not found"


def check_parent(parent: str, field: str = "parent") -> None:
    """``projects/PROJECT/locations/LOCATION``: LOCATION a Vertex AI region or one of
    Artifact Registry's multi-regions."""
    match = requests.PARENT.fullmatch(parent)
    if match is not None and match.group(2) in MULTI_REGIONS:
        return
    requests.check_parent(parent, field)


def check_repository_id(repository_id: str, field: str = "repository_id") -> None:
    if REPOSITORY_ID.fullmatch(repository_id) is None:
        raise InputError.of(
            field,
            f"{brief(repository_id)} is not a repository ID; accepted: {REPOSITORY_RULE}",
        )


def check_name(name: str, field: str = "name", gcr: bool = False) -> None:
    """``projects/P/locations/L/repositories/R``, each part checked; with ``gcr``, also a
    Container Registry host's repository (``.../repositories/gcr.io``), as the parent of the
    images pushed to it."""
    parent, sep, repository_id = name.rpartition("/repositories/")
    if not sep:
        raise InputError.of(
            field,
            f"{brief(name)} is not a repository's name; accepted: "
            "projects/PROJECT/locations/LOCATION/repositories/REPOSITORY",
        )
    check_parent(parent, field)
    if not (gcr and repository_id in GCR_HOSTS):
        check_repository_id(repository_id, field)


def registry_uri(name: str, format_: ar.Repository.Format) -> str:
    """``LOCATION-FORMAT.pkg.dev/PROJECT/REPOSITORY`` (a domain-scoped project's ``:`` is a
    ``/`` there)."""
    _, project, _, location, _, repository_id = name.split("/")
    return f"{location}-{format_.name.lower()}.pkg.dev/{project.replace(':', '/')}/{repository_id}"


def check_repository(repository: ar.Repository, field: str, creating: bool) -> None:
    """A repository to create: its ``format`` (required) and labels; an update's labels are
    checked once its mask is read (:meth:`Repositories.update`)."""
    if not creating:
        return
    if repository.format_ == ar.Repository.Format.FORMAT_UNSPECIFIED:
        formats = [f for f in ar.Repository.Format.__members__ if f != "FORMAT_UNSPECIFIED"]
        raise InputError.of(
            "repository.format", f"FORMAT_UNSPECIFIED; accepted: one of {', '.join(formats)}"
        )
    requests.check_labels(repository.labels, "repository.labels")


class Repositories:
    """The repositories, records of the root, as the standard methods call them."""

    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.records: Records = state.records

    def create(self, kind: Kind, parent: str, resource_id: str, resource: Any, field: str) -> Any:
        resource.name = f"{parent}/repositories/{resource_id}"
        if resource.mode == ar.Repository.Mode.MODE_UNSPECIFIED:
            resource.mode = ar.Repository.Mode(ar.Repository.Mode.STANDARD_REPOSITORY)
        now = self.state.clock.now()
        resource.create_time = now
        resource.update_time = now
        resource.size_bytes = 0
        resource.registry_uri = registry_uri(resource.name, resource.format_)
        try:
            self.records.insert(REPOSITORIES, parent, resource)
        except AlreadyExists:
            raise already_exists(ALREADY_EXISTS) from None
        return resource

    def require(self, kind: Kind, name: str) -> Any:
        found = self.records.get(REPOSITORIES, name)
        if found is None:
            raise not_found(f"{NOT_FOUND}: repository {name}")
        return found

    def page(self, kind: Kind, parent: str, **query: Any) -> tuple[list[Any], str]:
        for field, verb in (("filter", "filter"), ("order_by", "order")):
            value = query.pop(field)
            if value:
                raise InputError.of(
                    field,
                    f"{brief(value)}: the emulator does not {verb} repositories (gcloud then "
                    "does it itself); accepted: ''",
                )
        return self.records.page(REPOSITORIES, parent, **query)

    def update(self, kind: Kind, given: Any, request: Any) -> Any:
        self.require(kind, given.name)
        paths = list(request.update_mask.paths)
        if not paths:
            paths = [p for p in UPDATABLE if getattr(given, p)]
        for path in paths:
            if path not in UPDATABLE:
                raise InputError.of(
                    "update_mask",
                    f"{brief(path)} is not updated by the emulator; accepted: "
                    f"{', '.join(UPDATABLE)}",
                )
        if "labels" in paths:
            requests.check_labels(given.labels, "repository.labels")

        def change(record: Any) -> None:
            if "description" in paths:
                record.description = given.description
            if "labels" in paths:
                record.labels.clear()
                record.labels.update(dict(given.labels))

        return self.records.update(REPOSITORIES, given.name, change)

    def delete(self, kind: Kind, request: Any) -> None:
        found = self.require(kind, request.name)
        for image in all_images(self.state, found.name):
            self.records.delete(DOCKER_IMAGES, image.name)
        self.records.delete(REPOSITORIES, found.name)


class DockerImages:
    """The Docker images pushed to a repository (:func:`trainpool.emulator.records.
    repositories.record_push`), as Get and List read them."""

    def __init__(self, state: EmulatorState) -> None:
        self.records: Records = state.records
        self.repositories = Repositories(state)

    def require(self, kind: Kind, name: str) -> Any:
        found = self.records.get(DOCKER_IMAGES, name)
        if found is None:
            raise not_found(f"{NOT_FOUND}: docker image {name}")
        return found

    def page(self, kind: Kind, parent: str, **query: Any) -> tuple[list[Any], str]:
        self_check = query.pop("order_by")
        if self_check:
            raise InputError.of(
                "order_by",
                f"{brief(self_check)}: the emulator does not order docker images (gcloud then "
                "sorts itself); accepted: ''",
            )
        self.repositories.require(REPOSITORIES, parent)  # NOT_FOUND for a repository never made
        return self.records.page(DOCKER_IMAGES, parent, **query)


def check_docker_image_name(name: str) -> None:
    """``projects/P/locations/L/repositories/R/dockerImages/IMAGE@DIGEST``."""
    repository, sep, image = name.rpartition("/dockerImages/")
    if not sep or not image:
        raise InputError.of(
            "name",
            f"{brief(name)} is not a docker image's name; accepted: projects/PROJECT/locations/"
            "LOCATION/repositories/REPOSITORY/dockerImages/IMAGE@sha256:DIGEST",
        )
    check_name(repository, "name", gcr=True)


def package_versions(state: EmulatorState, request: version.ListVersionsRequest) -> Any:
    """ListVersions of a Docker package (``.../repositories/R/packages/IMAGE``, the image's
    path with ``/`` as ``%2F``): a Version per pushed digest, newest first, its tags with
    view FULL (what ``gcloud artifacts docker images list REPO/IMAGE`` reads). One page;
    ``filter`` refused by name, ``order_by`` left to gcloud, which sorts itself."""
    repository, sep, package_id = request.parent.rpartition("/packages/")
    if not sep or not package_id:
        raise InputError.of(
            "parent",
            f"{brief(request.parent)} is not a package's name; accepted: projects/PROJECT/"
            "locations/LOCATION/repositories/REPOSITORY/packages/PACKAGE",
        )
    check_name(repository, "parent", gcr=True)
    if request.filter:
        raise InputError.of(
            "filter",
            f"{brief(request.filter)}: the emulator does not filter versions; accepted: ''",
        )
    if state.records.get(REPOSITORIES, repository) is None:
        raise not_found(f"{NOT_FOUND}: repository {repository}")
    wanted = unquote(package_id)
    found = [i for i in all_images(state, repository) if package_of(i) == wanted]
    if not found:
        raise not_found(f"{NOT_FOUND}: package {request.parent}")
    full = request.view == version.VersionView.FULL
    versions = []
    for image in reversed(found):
        name = f"{request.parent}/versions/{image.name.rsplit('@', 1)[1]}"
        related = [tag.Tag(name=f"{request.parent}/tags/{t}", version=name) for t in image.tags]
        versions.append(
            version.Version(
                name=name,
                create_time=image.upload_time,
                update_time=image.update_time,
                related_tags=related if full else [],
            )
        )
    return version.ListVersionsResponse(versions=versions)


def handler(state: EmulatorState) -> Service:
    """The ArtifactRegistry handler."""

    def finished(name: str, response: Any) -> operations_pb2.Operation:
        """A done operation of the repository ``name``'s location (``projects/P/locations/
        L/operations/ID``), kept for polling; ``response`` None: ``Empty``."""
        return state.operations.save(
            operations_pb2.Operation(
                name=f"{name.rsplit('/repositories/', 1)[0]}/operations/"
                f"{state.new_id('operation')}",
                done=True,
                metadata=pack(ar_service.OperationMetadata()),
                response=pack(empty_pb2.Empty() if response is None else response),
            )
        )

    repositories = Resource(
        REPOSITORIES,
        Repositories(state),
        check_parent,
        check_name,
        check_repository,
        resource_id=check_repository_id,
        operations=("Create", "Delete"),
        plural="Repositories",
    )
    images = Resource(
        DOCKER_IMAGES,
        cast(ResourceRecords, DockerImages(state)),  # Get and List only: images come by push
        lambda name, field: check_name(name, field, gcr=True),
        lambda name, field: check_docker_image_name(name),
        verbs=("Get", "List"),
        queries=("order_by",),
    )
    table = {**methods(ar, finished, repositories), **methods(artifact, finished, images)}
    table["ListVersions"] = (
        lambda request: package_versions(state, request),
        version.ListVersionsRequest,
        version.ListVersionsResponse,
    )
    return service(SERVICE, table)
