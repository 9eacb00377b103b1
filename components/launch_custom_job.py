"""launch_custom_job: run one Vertex CustomJob (pools in their roles) to the end."""

from typing import NamedTuple

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
    image_uri: str = "",
    labels: dict = {},  # noqa: B006 (KFP compiles the default into the spec; never mutated)
    base_output_directory: str = "",
    timeout: str = "",
    service_account: str = "",
    strategy: str = "",
    max_wait_duration: str = "",
    job_fields: dict = {},  # noqa: B006 (KFP compiles the default into the spec)
    task_id: str = dsl.PIPELINE_TASK_ID_PLACEHOLDER,
) -> NamedTuple("Outputs", job_name=str, state=str):
    """Create the CustomJob (or re-attach to this task's job), follow it, cancel it on SIGTERM.

    custom_job_spec is plan_cluster's output: REST JSON, pools in positional roles, {} kept.
    image_uri fills every pool that has neither an image nor a Python package.
    Empty strings keep what the spec says; max_wait_duration applies only with FLEX_START.
    job_fields is plan_cluster's output of the same name (the request's labels and
    encryption key); labels given here win over its labels.
    """
    from trainpool.vertex import launch

    options = launch.Options(
        image_uri, base_output_directory, timeout, service_account, strategy, max_wait_duration
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
    result.raise_for_state()
    return result.job_name, result.state
