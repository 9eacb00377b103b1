"""select_model: the run's model as one artifact, from the train or sweep task's outcome."""

from google_cloud_pipeline_components.types.artifact_types import UnmanagedContainerModel
from kfp import dsl
from kfp.dsl import Output

from trainpool.config import COMPONENTS_IMAGE


@dsl.component(base_image=COMPONENTS_IMAGE, install_kfp_package=False)
def select_model(outcome: dict, model: Output[UnmanagedContainerModel], serving_image: str = ""):
    """The model directory outcome["modelUri"] names (the single job's or the best trial's),
    typed for GCPC's ModelUploadOp and served by serving_image when given. One task after
    whichever branch ran, because an artifact dsl.OneOf does not run under kfp.local."""
    from trainpool.vertex import launch

    if not outcome.get("modelUri"):
        raise ValueError(
            f"outcome: {outcome!r} names no modelUri; accepted: the outcome of launch_custom_job "
            "or hyperparameter_sweep for a job with an output directory"
        )
    model.uri = outcome["modelUri"]
    model.metadata = launch.model_metadata(serving_image)
