"""launch_custom_job: run one Vertex CustomJob (pools in their roles) to the end."""

from typing import NamedTuple

from google_cloud_pipeline_components.types.artifact_types import UnmanagedContainerModel
from kfp import dsl
from kfp.dsl import Markdown, Output, OutputPath

from trainpool.config import COMPONENTS_IMAGE


@dsl.component(base_image=COMPONENTS_IMAGE, install_kfp_package=False)
def launch_custom_job(
    project: str,
    location: str,
    display_name: str,
    custom_job_spec: dict,
    gcp_resources: OutputPath(str),
    summary: Output[Markdown],
    model: Output[UnmanagedContainerModel],
    image_uri: str = "",
    labels: dict = {},  # noqa: B006 (KFP compiles the default into the spec; never mutated)
    base_output_directory: str = "",
    timeout: str = "",
    service_account: str = "",
    strategy: str = "",
    max_wait_duration: str = "",
    job_fields: dict = {},  # noqa: B006 (KFP compiles the default into the spec)
    task_id: str = dsl.PIPELINE_TASK_ID_PLACEHOLDER,
    pipeline_root: str = dsl.PIPELINE_ROOT_PLACEHOLDER,
    run_id: str = dsl.PIPELINE_JOB_ID_PLACEHOLDER,
    serving_image: str = "",
) -> NamedTuple("Outputs", job_name=str, state=str, outcome=dict):
    """Create the CustomJob (or re-attach to this task's job), follow it, cancel it on SIGTERM.

    custom_job_spec is plan_cluster's output: REST JSON, pools in positional roles, {} kept.
    image_uri fills every pool that has neither an image nor a Python package.
    Empty strings keep what the spec says; max_wait_duration applies only with FLEX_START.
    job_fields is plan_cluster's output of the same name (the request's labels and
    encryption key); labels given here win over its labels. The job writes under
    <base>/<run_id>/ (base: base_output_directory, else the spec's, else the pipeline
    root), so no two runs share a folder. A retry of the task after the job FAILED, was
    CANCELLED or EXPIRED (a preemption, say) creates the next attempt's job; a re-run while
    it runs re-attaches. model is the job's model directory, typed for GCPC's ModelUploadOp
    (served by serving_image when given); outcome names the job, its state and the model.
    """
    from trainpool.vertex import launch

    options = launch.Options(
        image_uri,
        base_output_directory,
        timeout,
        service_account,
        strategy,
        max_wait_duration,
        pipeline_root,
        run_id,
    )
    job = launch.custom_job(
        display_name,
        custom_job_spec,
        options=options,
        user_labels=labels,
        task_id=task_id,
        job_fields=job_fields,
    )
    result = launch.launch(project, location, job, gcp_resources, task_id)
    with open(summary.path, "w") as f:
        f.write(result.summary)
    model.uri = result.model_uri
    model.metadata = launch.model_metadata(serving_image)
    result.raise_for_state()
    return result.job_name, result.state, result.outcome
