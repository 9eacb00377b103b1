"""upload_model: register the pipeline's model in the Vertex AI Model Registry."""

from typing import NamedTuple

from google_cloud_pipeline_components.types.artifact_types import UnmanagedContainerModel
from kfp import dsl
from kfp.dsl import Input

from trainpool.config import COMPONENTS_IMAGE


@dsl.component(base_image=COMPONENTS_IMAGE, install_kfp_package=False)
def upload_model(
    project: str,
    location: str,
    display_name: str,
    model: Input[UnmanagedContainerModel],
    serving_image: str = "",
) -> NamedTuple("Outputs", model_name=str):
    """Upload model (a model directory, as launch_custom_job and hyperparameter_sweep give it)
    to the Model Registry, served by serving_image (else the image its metadata names).
    Outputs the registered Model's resource name. GCPC's ModelUploadOp takes the same
    artifact; this step also runs on the local emulator, where GCPC components cannot.
    """
    from trainpool.vertex import models

    image = serving_image or model.metadata.get("containerSpec", {}).get("imageUri", "")
    registered = models.upload(project, location, display_name, model.uri, image)
    return (registered.name,)
