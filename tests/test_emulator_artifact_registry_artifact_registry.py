"""Artifact Registry (``google.devtools.artifactregistry.v1.ArtifactRegistry``) repositories as
Google's notebooks make them: ``gcloud artifacts repositories create REPO
--repository-format=docker --location=us-central1`` under ``trainpool exec``, then list,
describe, a second create, a bad name, delete; the official Python client over gRPC, across
a restart; what a Cloud Build push to a repository never created writes in the build log.

What Google's API does, from its reference
(https://cloud.google.com/artifact-registry/docs/reference/rest/v1/projects.locations.repositories):
create and delete are long-running operations (repositories/create answers an Operation
whose response is the Repository; repositories/delete's is Empty); a repository's name is
``projects/P/locations/L/repositories/R``; patch takes an ``updateMask``; a second create of
a name answers ALREADY_EXISTS "the repository already exists" (what gcloud prints against
Google). Repository names: "lowercase letters, numbers, and hyphens, must begin with a
letter, end with a letter or number", at most 63 characters
(https://cloud.google.com/artifact-registry/docs/repositories/create-repos). A Docker push
to a repository that does not exist fails: "name unknown: Repository ... not found".
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import grpc
import pytest
from fixtures.shell import PROJECT, gcloud, needs_gcloud, ok
from google.api_core import exceptions
from google.cloud import artifactregistry_v1 as ar
from google.cloud.artifactregistry_v1.services.artifact_registry.transports import (
    ArtifactRegistryGrpcTransport,
)
from google.protobuf import empty_pb2, field_mask_pb2

import trainpool.emulator as emulator
from trainpool.emulator.artifact_registry.repositories import (
    push_problem,
    read_image_name,
    repository_of,
)
from trainpool.emulator.jobs import containers
from trainpool.emulator_client.registry import record_push
from trainpool.redirect import docker as docker_shim

pytestmark = pytest.mark.timeout(120)
LOCATION = "us-central1"
PARENT = f"projects/{PROJECT}/locations/{LOCATION}"


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    # no container engine: its Cloud Build push is the local image store's (what is tested
    # here is the registry's answer to a push, not the build)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(containers.SWITCH_ENV, "off")
        with emulator.start(tmp_path_factory.mktemp("artifact-registry") / "root") as running:
            yield running


def client(emu: emulator.Emulator) -> ar.ArtifactRegistryClient:
    channel = grpc.insecure_channel(emu.address)
    return ar.ArtifactRegistryClient(transport=ArtifactRegistryGrpcTransport(channel=channel))


def repos(
    emu: emulator.Emulator, *args: str, location: str = LOCATION
) -> subprocess.CompletedProcess[str]:
    """``gcloud artifacts repositories ARGS --location=LOCATION``."""
    return gcloud(emu, "artifacts", "repositories", *args, f"--location={location}")


@needs_gcloud
def test_gcloud_creates_lists_describes_and_deletes_a_repository(emu: emulator.Emulator) -> None:
    create = ("create", "trainers", "--repository-format=docker")
    done = repos(emu, *create, "--description=Training images")
    ok(done)
    assert "Created repository [trainers]." in done.stderr

    listed = json.loads(ok(repos(emu, "list", "--format=json")))
    assert len(listed) == 1
    repo = listed[0]
    assert repo["name"] == f"{PARENT}/repositories/trainers"
    assert repo["format"] == "DOCKER"
    assert repo["description"] == "Training images"
    assert repo["mode"] == "STANDARD_REPOSITORY"
    assert repo["registryUri"] == f"{LOCATION}-docker.pkg.dev/{PROJECT}/trainers"
    assert repo["createTime"] == repo["updateTime"]
    assert json.loads(ok(repos(emu, "describe", "trainers", "--format=json"))) == repo

    again = repos(emu, *create)
    assert again.returncode == 1
    assert "ALREADY_EXISTS: the repository already exists" in again.stderr

    # gcloud refuses a name against the rule itself, before any request ...
    bad = repos(emu, "create", "Trainers_1", "--repository-format=docker")
    assert bad.returncode == 1
    assert "Names may only contain lowercase letters, numbers, and hyphens" in bad.stderr
    # ... but not its length: the emulator does, naming the rule
    long = repos(emu, "create", "r" * 64, "--repository-format=docker")
    assert long.returncode == 1
    assert "INVALID_ARGUMENT: repository_id: " in long.stderr
    assert "lowercase letters, digits and hyphens" in long.stderr
    assert "at most 63 characters" in long.stderr
    elsewhere = repos(emu, "create", "r", "--repository-format=docker", location="mars-east1")
    assert elsewhere.returncode == 1
    assert "'mars-east1' is not a known location" in elsewhere.stderr

    done = repos(emu, "delete", "trainers")
    ok(done)
    assert "Deleted repository [trainers]." in done.stderr
    assert json.loads(ok(repos(emu, "list", "--format=json"))) == []
    gone = repos(emu, "describe", "trainers")
    assert gone.returncode == 1 and "NOT_FOUND: Requested entity was not found" in gone.stderr


def test_the_python_client_over_grpc_and_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "root"
    name = f"{PARENT}/repositories/wheels"
    with emulator.start(root) as first:
        first.advance_clock(by=timedelta(days=3))  # times come from the emulator's clock
        api = client(first)
        operation = api.create_repository(
            parent=PARENT,
            repository_id="wheels",
            repository=ar.Repository(
                format_=ar.Repository.Format.PYTHON,
                description="built wheels",
                labels={"team": "ml"},
            ),
        )
        assert operation.operation.done
        assert operation.operation.name.startswith(f"{PARENT}/operations/")
        created = operation.result(timeout=10)
        assert created.name == name
        assert created.registry_uri == f"{LOCATION}-python.pkg.dev/{PROJECT}/wheels"
        assert created.mode == ar.Repository.Mode.STANDARD_REPOSITORY
        clock = first.clock.now()
        assert timedelta(0) <= clock - created.create_time < timedelta(minutes=1)

        with pytest.raises(exceptions.AlreadyExists, match="the repository already exists"):
            api.create_repository(parent=PARENT, repository_id="wheels", repository=created)
        with pytest.raises(exceptions.InvalidArgument, match="FORMAT_UNSPECIFIED; accepted"):
            api.create_repository(parent=PARENT, repository_id="nofmt", repository=ar.Repository())
        with pytest.raises(exceptions.InvalidArgument, match="'-x' is not a repository ID"):
            api.create_repository(parent=PARENT, repository_id="-x", repository=created)

        change = ar.Repository(name=name, description="wheels, built", labels={"team": "infra"})
        mask = field_mask_pb2.FieldMask(paths=["description"])
        updated = api.update_repository(repository=change, update_mask=mask)
        assert (updated.description, dict(updated.labels)) == ("wheels, built", {"team": "ml"})
        assert updated.update_time > updated.create_time
        with pytest.raises(exceptions.InvalidArgument, match="'kms_key_name' is not updated"):
            api.update_repository(
                repository=change, update_mask=field_mask_pb2.FieldMask(paths=["kms_key_name"])
            )

    with emulator.start(root) as second:
        api = client(second)
        assert api.get_repository(name=name) == updated
        assert [r.name for r in api.list_repositories(parent=PARENT)] == [name]
        assert api.delete_repository(name=name).result(timeout=10) == empty_pb2.Empty()
        with pytest.raises(exceptions.NotFound, match="Requested entity was not found"):
            api.get_repository(name=name)
        assert list(api.list_repositories(parent=PARENT)) == []


def test_a_push_to_a_repository_never_created_is_written_in_the_build_log(
    emu: emulator.Emulator,
) -> None:
    image = f"{LOCATION}-docker.pkg.dev/{PROJECT}/never-made/trainer:v1"
    assert repository_of(image) == f"{PARENT}/repositories/never-made"
    assert repository_of("us-docker.pkg.dev/example.com/proj/repo/img@sha256:00") == (
        "projects/example.com:proj/locations/us/repositories/repo"
    )
    for other in ("gcr.io/demo/trainer", "python:3.11", f"{LOCATION}-docker.pkg.dev/demo/r"):
        assert repository_of(other) is None and push_problem(emu.state, other) is None

    problem = push_problem(emu.state, image)
    assert problem is not None
    assert problem.startswith(f"WARNING: {image}: repository {PARENT}/repositories/never-made")
    google = 'on Google Cloud this push fails (name unknown: Repository "never-made" not found)'
    assert google in problem
    assert "gcloud artifacts repositories create never-made --repository-format=docker" in problem

    api = client(emu)
    Format = ar.Repository.Format
    for repository_id, format_ in (("images", Format.DOCKER), ("pypi", Format.PYTHON)):
        repository = ar.Repository(format_=format_)
        api.create_repository(
            parent=PARENT, repository_id=repository_id, repository=repository
        ).result(timeout=10)
    assert push_problem(emu.state, f"{LOCATION}-docker.pkg.dev/{PROJECT}/images/t:1") is None
    wrong = push_problem(emu.state, f"{LOCATION}-docker.pkg.dev/{PROJECT}/pypi/t:1")
    assert wrong is not None and "is a PYTHON repository" in wrong


def test_a_cloud_build_push_logs_the_missing_repository_and_still_pushes(
    emu: emulator.Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainpool.images import image_store
    from trainpool.images.service import build_image

    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu.storage_address or "")
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text("print('trainer')\n")
    image = f"{LOCATION}-docker.pkg.dev/{PROJECT}/not-created/trainer"
    lines: list[str] = []
    built = build_image(
        str(src), image_uri=image, backend="cloud", project=PROJECT, log=lines.append
    )
    build_id = next(line for line in lines if " logs at " in line).split()[2].rstrip(":")
    log = (emu.root / "builds" / build_id / "log.txt").read_text()
    assert f"repository {PARENT}/repositories/not-created was not created" in log
    assert 'name unknown: Repository "not-created" not found' in log
    assert "DONE" in log  # not failed: existing flows push without creating repositories
    assert image_store.lookup(str(built.to_dict()["imageUri"]), emu.root) is not None


def test_image_names_are_read_as_artifact_registry_and_container_registry_read_them() -> None:
    read = read_image_name("us-central1-docker.pkg.dev/demo/repo/team/trainer:v2")
    assert read is not None
    assert (read.repository, read.prefix, read.package, read.tag, read.digest) == (
        f"{PARENT}/repositories/repo",
        "us-central1-docker.pkg.dev/demo/repo",
        "team/trainer",
        "v2",
        "",
    )
    gcr = read_image_name("eu.gcr.io/demo/trainer@sha256:ab")
    assert gcr is not None and gcr.gcr
    assert (gcr.repository, gcr.package, gcr.digest) == (
        "projects/demo/locations/europe/repositories/eu.gcr.io",
        "trainer",
        "sha256:ab",
    )
    scoped = read_image_name("us-docker.pkg.dev/example.com/proj/repo/img:1")
    assert scoped is not None and scoped.repository == (
        "projects/example.com:proj/locations/us/repositories/repo"
    )
    for other in ("python:3.11-slim", "docker.io/library/python", "us-docker.pkg.dev/p/r"):
        assert read_image_name(other) is None, other


def test_a_recorded_push_is_listed_by_the_official_client_and_a_tag_moves(
    emu: emulator.Emulator,
) -> None:
    # what docker push under trainpool exec asks (the emulator's Local.Push), then what
    # the official client reads back over gRPC: ListDockerImages, GetDockerImage; a tag
    # pushed again for another image leaves the first one, as on Artifact Registry
    registry = client(emu)
    made = registry.create_repository(
        parent=PARENT,
        repository_id="pushed",
        repository=ar.Repository(format_=ar.Repository.Format.DOCKER),
    )
    made.result()
    image = "us-central1-docker.pkg.dev/demo/pushed/trainer"
    first, second = "sha256:" + "1" * 64, "sha256:" + "2" * 64
    record_push(emu.address, f"{image}:v1", first, 1000, "2026-11-28T08:00:00.123456789Z")
    record_push(emu.address, f"{image}:v1", second, 2000)
    record_push(emu.address, f"{image}:v2", second, 2000)
    listed = list(registry.list_docker_images(parent=f"{PARENT}/repositories/pushed"))
    found = {i.uri: list(i.tags) for i in listed}
    assert found == {f"{image}@{first}": [], f"{image}@{second}": ["v1", "v2"]}
    one = registry.get_docker_image(name=next(i.name for i in listed if second in i.name))
    assert one.image_size_bytes == 2000
    assert one.media_type == "application/vnd.docker.distribution.manifest.v2+json"
    assert one.name == f"{PARENT}/repositories/pushed/dockerImages/trainer@{second}"
    first_record = next(i for i in listed if first in i.name)
    assert first_record.build_time.isoformat().startswith("2026-11-28T08:00:00")
    # a repository never created refuses the push, in Artifact Registry's words; nothing kept
    with pytest.raises(grpc.RpcError) as refused:
        record_push(emu.address, "us-central1-docker.pkg.dev/demo/absent/t:1", first)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert refused.value.details() == 'name unknown: Repository "absent" not found'
    with pytest.raises(exceptions.NotFound):
        registry.list_docker_images(parent=f"{PARENT}/repositories/absent").pages.__next__()
    # deleting the repository deletes its images
    registry.delete_repository(name=f"{PARENT}/repositories/pushed").result()
    with pytest.raises(exceptions.NotFound):
        registry.get_docker_image(name=one.name)


def test_docker_commands_other_than_a_push_or_pull_of_google_registries_are_dockers() -> None:
    # the shim answers only push and pull of Artifact Registry and Container Registry names;
    # docker's global options (with values) are kept before the command
    assert docker_shim.split_command(["-H", "unix:///s", "--debug", "push", "x"]) == (
        ["-H", "unix:///s", "--debug"],
        ["push", "x"],
    )
    assert docker_shim.emulated("us-central1-docker.pkg.dev/p/r/i:1")
    assert docker_shim.emulated("gcr.io/p/i")
    assert not docker_shim.emulated("localhost:5000/i")
    assert not docker_shim.emulated("python:3.11-slim")
