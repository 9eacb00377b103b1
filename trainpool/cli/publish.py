"""``trainpool publish``: build and push the components image, then compile against its digest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from trainpool.cli._common import fail

COMPONENTS = "components"


def publish_command(
    repository: Annotated[
        str,
        typer.Option(
            "--repository",
            help="Artifact Registry repository id (with --project), or a full image "
            "repository such as us-docker.pkg.dev/P/R/components.",
        ),
    ] = "",
    project: Annotated[str, typer.Option(help="Google Cloud project (Cloud Build).")] = "",
    location: Annotated[str, typer.Option(help="Artifact Registry location.")] = "us-central1",
    local: Annotated[
        bool, typer.Option("--local", help="Build into the local image store instead.")
    ] = False,
    bucket: Annotated[str, typer.Option(help="Bucket for contexts (PROJECT_cloudbuild).")] = "",
    root: Annotated[
        Path | None, typer.Option("--root", help="Local store root (default $TRAINPOOL_HOME).")
    ] = None,
) -> None:
    """Build the components image from the root Dockerfile, push it, and compile every
    component and pipeline so each task names it by digest.

    The build context is what the components import of trainpool (written to the root
    .dockerignore first), so an edit to the emulator or the CLI needs no publish.

    Records the image in components-image.json (later `trainpool compile` runs use it);
    check in that file and the recompiled YAML together.
    """
    from trainpool import compiling
    from trainpool.images.service import build_image

    try:
        project_dir = compiling.project_root()
    except FileNotFoundError as err:
        fail(str(err))
    if not local and not project:
        fail("--project: not given; accepted: the project to build in (or --local)")
    image = repository if "/" in repository else ""
    if not image and not local:
        if not repository:
            fail("--repository: not given; accepted: an Artifact Registry repository id")
        image = f"{location}-docker.pkg.dev/{project}/{repository}/{COMPONENTS}"
    (project_dir / compiling.DOCKERIGNORE).write_text(
        compiling.dockerignore_text(project_dir), encoding="utf-8"
    )
    carried = [f for f in compiling.components_image_files(project_dir) if f.endswith(".py")]
    total = sum(1 for p in (project_dir / compiling.IMAGE_PACKAGE).rglob("*.py"))
    typer.echo(
        f"the image carries {len(carried)} of trainpool's {total} modules: what the components "
        f"import (listed in {compiling.DOCKERIGNORE})"
    )
    try:
        result = build_image(
            project_dir,
            image_uri=image or f"local/trainpool-{COMPONENTS}",
            backend="local" if local else "cloud",
            project=project,
            location=location,
            bucket=bucket,
            root=root,
        )
    except (ValueError, FileNotFoundError) as err:
        fail(str(err))
    except RuntimeError as err:
        fail(str(err), 1)
    record = {
        "image": result.image_uri,
        "contextDigest": f"sha256:{result.digest}",
        "backend": result.backend,
    }
    (project_dir / compiling.PUBLISHED_IMAGE).write_text(
        json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    typer.echo(f"published {result.image_uri} ({result.backend})")
    for path in compiling.compile_all(project_dir, result.image_uri):
        typer.echo(f"wrote {path.relative_to(project_dir)}")


def register(app: typer.Typer) -> None:
    app.command("publish")(publish_command)
