"""KFP component: build a trainer folder's training image (thin wiring over trainpool.images)."""

from typing import NamedTuple

from kfp import dsl

from trainpool.config import COMPONENTS_IMAGE


@dsl.component(base_image=COMPONENTS_IMAGE, install_kfp_package=False)
def build_image(
    source_dir: str = "",
    image_uri: str = "",
    framework: str = "pytorch",
    reduction_server: bool = False,
    backend: str = "auto",
    project: str = "",
    location: str = "us-central1",
) -> NamedTuple("Outputs", image_uri=str, cached=bool):
    """Build a training image tagged with the digest of its context; skip it when it exists.

    source_dir is the trainer: a source object gs://.../trainpool/sources/<digest>.tar.gz
    (what `trainpool submit` and `trainpool run --local` make of a local folder; read with
    the Cloud Storage client, not /gcs) or a folder the task can see. Its own Dockerfile is
    used, else one is generated for framework ("pytorch" or "tensorflow"), with the
    Reduction Server plugin when reduction_server is true. image_uri is the repository to
    push to ("": LOCATION-docker.pkg.dev/PROJECT/trainpool/trainer); with source_dir empty
    it is the image to use as given (no build; cached is true). backend is "auto" (Cloud
    Build when a project is given, else local), "cloud" or "local". Outputs the image URI
    with its digest, and whether the build was skipped because that image existed.
    """
    if not source_dir:
        if not image_uri:
            raise ValueError(
                "source_dir and image_uri: both empty; accepted: a trainer to build "
                "(source_dir), or an image to use as given (image_uri)"
            )
        return image_uri, True
    from trainpool.images.service import build_image as build

    result = build(
        source_dir,
        image_uri=image_uri,
        framework=framework,
        reduction_server=reduction_server,
        backend=backend,
        project=project,
        location=location,
        log=print,
    )
    return result.image_uri, result.cached
