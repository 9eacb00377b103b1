"""``google.devtools.artifactregistry.v1.ArtifactRegistry``: repositories, recorded.

Google's training notebooks create a Docker repository before their first build
(``gcloud artifacts repositories create REPO --repository-format=docker
--location=us-central1``); under ``trainpool exec`` that reaches this service (the REST door,
``artifactregistry.googleapis.com``). CreateRepository, GetRepository, ListRepositories,
UpdateRepository and DeleteRepository are served; repositories are records of the root
(:mod:`trainpool.emulator.records.resources`, kind :data:`REPOSITORIES`), so a restarted
emulator keeps them. They hold nothing: images still go to the local image store
(:mod:`trainpool.emulator.builds.build_runs`), whose log says when a push names a
repository that was not created (:func:`push_problem`: on Google Cloud that push fails).
Every other method of the API answers UNIMPLEMENTED naming it.

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
from typing import Any

from google.cloud.artifactregistry_v1.types import repository as ar
from google.cloud.artifactregistry_v1.types import service as ar_service
from google.longrunning import operations_pb2
from google.protobuf import empty_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, already_exists, not_found, service
from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.records.operations import pack
from trainpool.emulator.records.repositories import REPOSITORIES
from trainpool.emulator.records.resources import AlreadyExists
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


def check_name(name: str) -> None:
    """``projects/P/locations/L/repositories/R``, each part checked."""
    parent, sep, repository_id = name.rpartition("/repositories/")
    if not sep:
        raise InputError.of(
            "name",
            f"{brief(name)} is not a repository's name; accepted: "
            "projects/PROJECT/locations/LOCATION/repositories/REPOSITORY",
        )
    check_parent(parent, "name")
    check_repository_id(repository_id, "name")


def registry_uri(name: str, format_: ar.Repository.Format) -> str:
    """``LOCATION-FORMAT.pkg.dev/PROJECT/REPOSITORY`` (a domain-scoped project's ``:`` is a
    ``/`` there)."""
    _, project, _, location, _, repository_id = name.split("/")
    return f"{location}-{format_.name.lower()}.pkg.dev/{project.replace(':', '/')}/{repository_id}"


def handler(state: EmulatorState, manager: JobManager) -> Service:
    """The ArtifactRegistry handler."""
    records = state.records

    def finished(parent: str, response: Any) -> operations_pb2.Operation:
        """A done operation of ``parent`` (``projects/P/locations/L``), kept for polling."""
        return state.operations.save(
            operations_pb2.Operation(
                name=f"{parent}/operations/{state.new_id('operation')}",
                done=True,
                metadata=pack(ar_service.OperationMetadata()),
                response=pack(response),
            )
        )

    def existing(name: str) -> ar.Repository:
        check_name(name)
        found = records.get(REPOSITORIES, name)
        if found is None:
            raise not_found(f"{NOT_FOUND}: repository {name}")
        return found

    def create(request: ar.CreateRepositoryRequest) -> operations_pb2.Operation:
        check_parent(request.parent)
        check_repository_id(request.repository_id)
        repository = request.repository
        if repository.format_ == ar.Repository.Format.FORMAT_UNSPECIFIED:
            formats = [f for f in ar.Repository.Format.__members__ if f != "FORMAT_UNSPECIFIED"]
            raise InputError.of(
                "repository.format", f"FORMAT_UNSPECIFIED; accepted: one of {', '.join(formats)}"
            )
        requests.check_labels(repository.labels, "repository.labels")
        repository.name = f"{request.parent}/repositories/{request.repository_id}"
        if repository.mode == ar.Repository.Mode.MODE_UNSPECIFIED:
            repository.mode = ar.Repository.Mode(ar.Repository.Mode.STANDARD_REPOSITORY)
        now = state.clock.now()
        repository.create_time = now
        repository.update_time = now
        repository.size_bytes = 0
        repository.registry_uri = registry_uri(repository.name, repository.format_)
        try:
            records.insert(REPOSITORIES, request.parent, repository)
        except AlreadyExists:
            raise already_exists(ALREADY_EXISTS) from None
        return finished(request.parent, repository)

    def get(request: ar.GetRepositoryRequest) -> ar.Repository:
        return existing(request.name)

    def list_repositories(request: ar.ListRepositoriesRequest) -> ar.ListRepositoriesResponse:
        check_parent(request.parent)
        for field, verb in (("filter", "filter"), ("order_by", "order")):
            if getattr(request, field):
                raise InputError.of(
                    field,
                    f"{brief(getattr(request, field))}: the emulator does not {verb} "
                    "repositories (gcloud then does it itself); accepted: ''",
                )
        found, token = records.page(
            REPOSITORIES, request.parent, page_size=request.page_size, page_token=request.page_token
        )
        return ar.ListRepositoriesResponse(repositories=found, next_page_token=token)

    def update(request: ar.UpdateRepositoryRequest) -> ar.Repository:
        given = request.repository
        existing(given.name)
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

        return records.update(REPOSITORIES, given.name, change)

    def delete(request: ar.DeleteRepositoryRequest) -> operations_pb2.Operation:
        found = existing(request.name)
        records.delete(REPOSITORIES, found.name)
        return finished(found.name.rsplit("/repositories/", 1)[0], empty_pb2.Empty())

    return service(
        SERVICE,
        {
            "CreateRepository": (create, ar.CreateRepositoryRequest, operations_pb2.Operation),
            "GetRepository": (get, ar.GetRepositoryRequest, ar.Repository),
            "ListRepositories": (
                list_repositories,
                ar.ListRepositoriesRequest,
                ar.ListRepositoriesResponse,
            ),
            "UpdateRepository": (update, ar.UpdateRepositoryRequest, ar.Repository),
            "DeleteRepository": (delete, ar.DeleteRepositoryRequest, operations_pb2.Operation),
        },
    )
