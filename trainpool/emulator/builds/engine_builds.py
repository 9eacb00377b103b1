"""Cloud Build's builds run on the container engine: a real ``docker build``, every step run.

Where a container engine answers (:mod:`trainpool.emulator.jobs.containers`), a build's
source is built with it as ``gcloud builds submit`` builds it on Cloud Build: the engine's
builder runs every instruction, RUN steps included, and each line of its output goes to
the build's log (``Step 3/7 : RUN ...`` and what the step printed). A step that fails
fails the build, naming the step and ending with its output; one that fails for want of room
on the engine's disk (its output says "No space left on device", or the disk is seen full)
fails it naming that disk first (:class:`BuildDiskFull`: RESOURCE_EXHAUSTED from
``Local.Engine``; Cloud Build, which has no such status, ends it FAILURE with that detail).
The image is tagged with the build's ``images`` only when the build ends SUCCESS
(:mod:`.build_runs`), so a build cancelled meanwhile pushes nothing; a CustomJob naming one
of those names then runs as containers of it.

A base the engine lacks is pulled, as on a user's machine (the rule, shared with jobs and
pipeline tasks: :mod:`trainpool.emulator.jobs.engine_images`). Where it cannot be pulled (no
route to Docker Hub or Google's registries, as here) and it is one of the bases with an
offline stand-in (:mod:`trainpool.emulator.stand_ins.debian_bases`: ``python:3.9-slim``,
``python:3.11-slim``, ``python:3.13-slim``), the stand-in is made (once) and tagged with
the base's name, labelled as a stand-in, and the build log says so and how it differs
(among that, the CA bundle it trusts so that a RUN step reaches the package index behind a
TLS-intercepting proxy: ``TRAINPOOL_CA_BUNDLE``). A stand-in an earlier build tagged so that
does not trust today's bundle is made again and tagged in its place.
Vertex's prebuilt training images and Google's TensorFlow and PyTorch Deep Learning
Containers get a stand-in built on this machine, once (:mod:`trainpool.emulator.jobs.
prebuilt_bases`: the framework on a Python it supports, pandas and gcsfs), tagged with the
base's name, and the build log says how it differs. Any other base (NVIDIA's NGC images,
a registry this machine cannot reach) cannot be had: the build is then made by the local
image store's builder instead, as with no engine, and its log says why (:mod:`.build_runs`);
a job naming the image runs as processes that imitate it.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Mapping
from typing import Any

from trainpool.emulator.jobs.containers import NO_SPACE, ContainerEngine, EngineDiskFull
from trainpool.emulator.jobs.engine_images import ImageUnavailable, StandInFailed, ensure_image
from trainpool.images import image_config


class BuildFailed(Exception):
    """The engine's build failed: the message names the step and ends with its output."""


class BaseUnavailable(BuildFailed):
    """A base image the engine does not have, cannot pull, and has no stand-in for."""


class BuildDiskFull(BuildFailed):
    """A step failed for want of room on the engine's disk: the message names the disk, then
    the step and its output (RESOURCE_EXHAUSTED where an API answers with a code)."""


def dockerfile_of(data: bytes, name: str = "Dockerfile") -> str:
    """The Dockerfile ``name`` of a gzipped build context."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.name.lstrip("./") == name and member.isfile():
                handle = tar.extractfile(member)
                if handle is not None:
                    return handle.read().decode("utf-8", "replace")
    raise BuildFailed(f"the build's source has no {name}; accepted: a context with a Dockerfile")


def ensure_base(engine: ContainerEngine, name: str, log: io.TextIOBase) -> None:
    """Make base image ``name`` available to the engine's builder, by the one rule of
    :mod:`trainpool.emulator.jobs.engine_images`: it has it, it pulls it, or (where it cannot
    pull) the offline stand-in is tagged with the name."""
    try:
        ensure_image(engine, name, log, f"FROM {name}")
    except ImageUnavailable as err:
        raise BaseUnavailable(str(err)) from err
    except StandInFailed as err:
        raise BuildFailed(str(err)) from err


def build(
    engine: ContainerEngine,
    data: bytes,
    build_args: Mapping[str, str],
    log: io.TextIOBase,
    dockerfile: str = "Dockerfile",
) -> str:
    """Build the gzipped context ``data`` on ``engine``; the image's id. Raises BuildFailed."""
    text = dockerfile_of(data, dockerfile)
    for base in image_config.base_images(text, build_args):
        ensure_base(engine, base, log)
    log.write(f"building on {engine.describe}\n")
    log.flush()
    step = ""
    image_id = ""
    output: list[str] = []
    stream: Any = engine.client.api.build(
        fileobj=io.BytesIO(data),
        custom_context=True,
        encoding="gzip",
        dockerfile=dockerfile,
        buildargs=dict(build_args),
        rm=True,
        forcerm=True,
        decode=True,
    )
    for chunk in stream:
        if "stream" in chunk:
            text = str(chunk["stream"])
            log.write(text)
            log.flush()
            for line in text.splitlines():
                if line.startswith("Step "):
                    step, output = line, []
                elif line.strip():
                    output.append(line)
        if "aux" in chunk and isinstance(chunk["aux"], dict) and "ID" in chunk["aux"]:
            image_id = str(chunk["aux"]["ID"])
        if "error" in chunk:
            error = str(chunk["error"]).strip()
            log.write(f"ERROR: {error}\n")
            shown = "\n".join(output[-20:])
            said = f"{step or 'the build'} failed: {error}" + (f"\n{shown}" if shown else "")
            # a RUN step writes into the engine's disk: its own "No space left on device", or
            # the disk seen full now, is the disk's failure, not the step's
            full = engine.disk_full(f"when {step or 'the build'} failed")
            if full is None and NO_SPACE in f"{error}\n{shown}".lower():
                full = EngineDiskFull(
                    engine.describe,
                    engine.data_root or "(not on this machine)",
                    "a step found no room",
                )
            if full is not None:
                log.write(f"ERROR: {full.strerror}\n")
                raise BuildDiskFull(f"{full.strerror}.\n{said}")
            raise BuildFailed(said)
    if not image_id:
        raise BuildFailed(f"{engine.describe} ended the build without an image")
    return image_id
