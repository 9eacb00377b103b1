"""An image on the container engine, had as a user's machine has it: the engine has it, it
pulls it, or (where it cannot pull) an offline stand-in is made and tagged with its name.

One rule for everything that names an image: a job's pool (``containerSpec.imageUri``, a
``pythonPackageSpec``'s ``executorImageUri``), a pipeline task's ``base_image``, and a build's
``FROM`` (:func:`trainpool.emulator.builds.engine_builds.ensure_base`):

1. the engine has it (``docker build -t``, ``docker pull``, ``docker load``, a push under
   ``trainpool exec``): that image. A stand-in tagged so by an earlier run that does not
   trust today's CA bundle (:func:`.debian_bases.ca_bundle`) is made again;
2. else it is pulled, as ``docker run`` and ``docker build`` pull it on a user's machine,
   where the network allows: Docker Hub's ``python:3.11-slim``, NVIDIA's, Google's public
   images (Vertex's prebuilt training images, the Deep Learning Containers). Never a name of
   the registries the emulator serves (``LOCATION-docker.pkg.dev/PROJECT/...``, ``gcr.io/
   PROJECT/...``, :func:`trainpool.emulator.artifact_registry.repositories.read_image_name`)
   other than Google's public images: the emulator's Artifact Registry is the engine, so an
   image nobody pushed there is not pulled from Google's (with the emulator's token, by
   gcloud's credential helper);
3. else, for a base with an offline stand-in (:func:`has_stand_in`: ``python:3.X-slim``,
   :mod:`.debian_bases`; Vertex's prebuilt images and the TensorFlow and PyTorch Deep
   Learning Containers, :mod:`.prebuilt_bases`), the stand-in is made (once) and tagged with
   the name, and ``log`` says so and how it differs;
4. else :class:`ImageUnavailable`, saying why.
"""

from __future__ import annotations

import io

from trainpool.emulator.artifact_registry.repositories import read_image_name
from trainpool.emulator.jobs.containers import ContainerEngine
from trainpool.emulator.stand_ins import debian_bases, prebuilt_bases


class ImageUnavailable(Exception):
    """The engine does not have the image, cannot pull it, and it has no stand-in; ``why``
    says why it could not be pulled."""

    def __init__(self, message: str, why: str) -> None:
        super().__init__(message)
        self.why = why


class StandInFailed(Exception):
    """The image's stand-in could not be made (its message says why)."""


def public_name(name: str) -> str:
    """``name`` as Docker Hub's official images are named (``python:3.11-slim``)."""
    return name.removeprefix("docker.io/").removeprefix("library/")


def has_stand_in(name: str) -> bool:
    """Whether ``name`` has an offline stand-in (Debian's ``python:3.X-slim``, or a recipe of
    :mod:`.prebuilt_bases`)."""
    return public_name(name) in debian_bases.BASES or prebuilt_bases.recipe(name) is not None


def pullable(name: str) -> bool:
    """Whether ``name`` may be pulled: any registry's but the emulated ones (Google's public
    images excepted: those have stand-ins)."""
    return read_image_name(name) is None or prebuilt_bases.recipe(name) is not None


def ensure_image(engine: ContainerEngine, name: str, log: io.TextIOBase, what: str) -> None:
    """Make image ``name`` the engine's by the module's rule; ``what`` names it in what
    ``log`` is told and in the errors (``FROM python:3.11-slim``)."""
    if engine.image(name) is not None:
        stale = _stale_stand_in(engine, name)
        if not stale:
            return
        engine.client.images.remove(name)  # the tag only: the image stays while others use it
        why = f"the stand-in tagged so {stale}"
    else:
        if pullable(name):
            cannot = pull(engine, name)
            if cannot is None:
                log.write(f"{what}: pulled by {engine.describe}\n")
                return
        else:
            cannot = (
                "a name of the emulator's Artifact Registry, which has no such image: "
                f"nothing pulls it from Google's (push it first: docker push {name}, under "
                "trainpool exec)"
            )
        if not has_stand_in(name):
            raise ImageUnavailable(
                f"{what}: the container engine does not have it and cannot pull it "
                f"({cannot}); accepted: an image the engine has (docker pull, docker load, "
                "docker build -t) or a base with an offline stand-in "
                f"({', '.join(sorted(debian_bases.BASES))}, Vertex's prebuilt training images "
                "and the Deep Learning Containers of TensorFlow and PyTorch)",
                cannot,
            )
        why = f"cannot be pulled here ({cannot})"
    recipe = prebuilt_bases.recipe(name)
    if recipe is not None:
        log.write(f"{what}: {why}\n")
        try:
            made = prebuilt_bases.ensure(engine.client, recipe, log)
        except (OSError, ValueError) as err:
            raise StandInFailed(f"{what}: {err}") from err
        log.write(
            f"{what}: the stand-in made on this machine is tagged {name} (label "
            f"{debian_bases.LABEL}; it differs: "
            f"{(made.labels or {}).get(debian_bases.DIFFERENCE_LABEL, '')})\n"
        )
        return
    try:
        image = debian_bases.ensure(engine.client, public_name(name))
    except ValueError as err:  # TRAINPOOL_CA_BUNDLE names no bundle
        raise StandInFailed(f"{what}: {err}") from err
    repository, _, tag = name.rpartition(":")
    image.tag(repository, tag)
    differs = (image.labels or {}).get(debian_bases.DIFFERENCE_LABEL, "")
    log.write(
        f"{what}: {why}; the stand-in made offline from Debian's packages is tagged "
        f"{name} (label {debian_bases.LABEL}; it differs: {differs})\n"
    )


def _stale_stand_in(engine: ContainerEngine, name: str) -> str:
    """Why the engine's ``name``, a stand-in, must be made again (it does not trust today's
    CA bundle); empty when it need not be, and for a real image (pulled, loaded)."""
    from docker import errors

    try:
        image = engine.client.images.get(name)
    except errors.DockerException:
        return ""
    labels = image.labels or {}
    if debian_bases.LABEL not in labels:
        return ""
    try:
        wanted = debian_bases.ca_bundle()
    except ValueError:
        return "is checked against a TRAINPOOL_CA_BUNDLE that names no bundle"
    if debian_bases.current(image, wanted):
        return ""
    had = labels.get(debian_bases.CA_LABEL)
    return (
        f"trusts another CA bundle ({had})"
        if had
        else "was made before stand-ins carried a CA bundle"
    )


def pull(engine: ContainerEngine, name: str) -> str | None:
    """Pull ``name`` (no tag: ``latest``, as ``docker pull`` does): None when pulled, else why
    it could not be."""
    from docker import errors

    try:
        engine.client.images.pull(name)
    except errors.DockerException as err:
        return str(getattr(err, "explanation", None) or err)
    return None
