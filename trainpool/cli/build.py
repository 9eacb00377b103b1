"""``trainpool build-image DIR [--local] [--json]``: printing over ``trainpool.images.service``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from trainpool.cli._common import fail


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
        False, "--local", help="The local image store (what the emulator runs)."
    ),
    docker: bool = typer.Option(
        False, "--docker", help="The local Docker engine instead (the emulator cannot run it)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as one JSON object."),
    image: str = typer.Option(
        "",
        "--image",
        help="REPOSITORY or REPOSITORY:TAG, as `docker build -t` (default: from DIR's name).",
    ),
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
    """Build a training image tagged with the digest of its context (and with --image's tag,
    if any); skip the build when an image of that context exists."""
    from trainpool.images.service import build_image

    try:
        result = build_image(
            source_dir,
            image_uri=image,
            framework=framework,
            reduction_server=reduction_server,
            backend="docker" if docker else "local" if local else "auto",
            project=project,
            location=location,
            base_image=base_image,
            bucket=bucket,
            build_args=_build_args(build_arg or []),
            root=root,
        ).to_dict()
    except (ValueError, FileNotFoundError) as err:
        fail(str(err))
    except RuntimeError as err:
        fail(str(err), 1)
    if as_json:
        typer.echo(json.dumps(result, sort_keys=True))
    else:
        state = "cached, build skipped" if result["cached"] else "built"
        typer.echo(f"{result['imageUri']} ({state}, {result['backend']})")


def upload_source_command(
    source_dir: Annotated[Path, typer.Argument(help="The trainer folder.")],
    pipeline_root: Annotated[
        str, typer.Option("--pipeline-root", help="gs://BUCKET/PATH of the runs.")
    ],
) -> None:
    """Upload a trainer folder under the pipeline root; print the gs:// URI to pass as
    source_dir (for runs started with the SDK's PipelineJob instead of `trainpool submit`)."""
    from trainpool.images.sources import upload

    try:
        typer.echo(upload(source_dir, pipeline_root))
    except (ValueError, FileNotFoundError) as err:
        fail(str(err))


def register(app: typer.Typer) -> None:
    app.command("build-image")(build_image_command)
    app.command("upload-source")(upload_source_command)
