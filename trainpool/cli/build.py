"""``trainpool build-image DIR [--local] [--json]``; also the body of the build_image component."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from trainpool.cli._common import fail

BACKENDS = ("auto", "local", "cloud")


def default_root() -> Path:
    return Path(os.environ.get("TRAINPOOL_HOME", ".trainpool"))


def default_repository(source_dir: Path, local: bool, project: str, location: str) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", source_dir.resolve().name.lower()).strip("-") or "trainer"
    if local:
        return f"local/{name}"
    return f"{location}-docker.pkg.dev/{project}/trainpool/{name}"


def run_build(
    source_dir: str,
    image_uri: str = "",
    framework: str = "pytorch",
    reduction_server: bool = False,
    backend: str = "auto",
    project: str = "",
    location: str = "us-central1",
    base_image: str = "",
    bucket: str = "",
    build_args: dict[str, str] | None = None,
    root: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, object]:
    """Build ``source_dir``; return the ``--json`` result dict (``imageUri``, ``cached``, ...).

    ``auto`` is Cloud Build when a project is given (with the Vertex emulator set, only
    when a storage emulator is set too), else the local backend.
    """
    from trainpool.build import builder
    from trainpool.build.local_backend import local_backend
    from trainpool.vertex.clients import emulator_host

    if backend not in BACKENDS:
        raise ValueError(f"backend: {backend!r}; accepted: {', '.join(BACKENDS)}")
    storage_reachable = not emulator_host() or bool(os.environ.get("STORAGE_EMULATOR_HOST"))
    use_cloud = backend == "cloud" or (backend == "auto" and bool(project) and storage_reachable)
    if use_cloud and not project:
        raise ValueError("project: '' is empty; accepted: a project id (needed by backend 'cloud')")
    src = Path(source_dir)
    repository = image_uri or default_repository(src, not use_cloud, project, location)
    request = builder.BuildRequest(
        source_dir=src,
        repository=builder.repository(repository),
        framework=framework,
        base_image=base_image,
        reduction_server=reduction_server,
        build_args=build_args or {},
    )
    say = log or (lambda line: print(line, file=sys.stderr))
    if use_cloud:
        from trainpool.vertex.cloud_build import CloudBuildBackend

        chosen: builder.Backend = CloudBuildBackend(project, bucket=bucket, log=say)
    else:
        chosen = local_backend(root or default_root())
    return builder.build(request, chosen, log=say).to_dict()


def _build_args(values: list[str]) -> dict[str, str]:
    out = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise ValueError(f"--build-arg: {value!r}; accepted: KEY=VALUE")
        out[key] = val
    return out


def build_image_command(
    source_dir: Annotated[
        Path, typer.Argument(help="The trainer folder (its own Dockerfile is used).")
    ],
    local: bool = typer.Option(
        False, "--local", help="Docker engine if reachable, else local store."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object."),
    image: str = typer.Option("", "--image", help="Repository to tag (default: from DIR's name)."),
    framework: str = typer.Option("pytorch", help="pytorch or tensorflow (the prebuilt base)."),
    base_image: str = typer.Option(
        "", "--base-image", help="A base image instead of the prebuilt."
    ),
    reduction_server: bool = typer.Option(False, "--reduction-server", help="Add the RS plugin."),
    project: str = typer.Option("", help="Google Cloud project (Cloud Build)."),
    location: str = typer.Option("us-central1", help="Artifact Registry location."),
    bucket: str = typer.Option("", help="Bucket for contexts (default PROJECT_cloudbuild)."),
    build_arg: Annotated[
        list[str] | None, typer.Option("--build-arg", help="KEY=VALUE, repeatable.")
    ] = None,
    root: Annotated[
        Path | None, typer.Option("--root", help="Local store root (default $TRAINPOOL_HOME).")
    ] = None,
) -> None:
    """Build a training image whose tag is the digest of its context; skip it when it exists."""
    try:
        result = run_build(
            str(source_dir),
            image_uri=image,
            framework=framework,
            reduction_server=reduction_server,
            backend="local" if local else "auto",
            project=project,
            location=location,
            base_image=base_image,
            bucket=bucket,
            build_args=_build_args(build_arg or []),
            root=root,
        )
    except (ValueError, FileNotFoundError) as err:
        fail(str(err))
    except RuntimeError as err:
        fail(str(err), 1)
    if as_json:
        typer.echo(json.dumps(result, sort_keys=True))
    else:
        state = "cached, build skipped" if result["cached"] else "built"
        typer.echo(f"{result['imageUri']} ({state}, {result['backend']})")


def register(app: typer.Typer) -> None:
    app.command("build-image")(build_image_command)
