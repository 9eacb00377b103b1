"""KFP component: validate and plan a cluster request (thin wiring over trainpool.plan)."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Markdown, Output

from trainpool.config import COMPONENTS_IMAGE


@dsl.component(base_image=COMPONENTS_IMAGE, install_kfp_package=False)
def plan_cluster(
    cluster_request: dict,
    plan_report: Output[Markdown],
    location: str = "us-central1",
    worker_count: int = -1,
    machine_type: str = "",
    accelerator_type: str = "",
    accelerator_count: int = -1,
    reduction_server: str = "request",
    tuning_env: bool = False,
    pipeline_image: str = "",
    pipeline_source: str = "",
    allow_unknown_machine_types: bool = False,
) -> NamedTuple(
    "Outputs",
    worker_pool_specs=list,
    custom_job_spec=dict,
    reduction_server=dict,
    warnings=list,
    has_reduction_server=bool,
    job_fields=dict,
):
    """Plan a training cluster: a validated Vertex CustomJobSpec, sized Reduction Server, cost.

    The flat knobs override the request: -1 or "" keep it; reduction_server is
    "request", "on" or "off". allow_unknown_machine_types accepts machine types the
    catalog does not know (with a warning). Writes the plan as a Markdown table to plan_report.
    pipeline_image is the image the pipeline gives pools that name none (what it
    builds or takes as given); with it, the "no container image" warnings are left
    out of warnings and the report, since those pools will get it. pipeline_source is
    the trainer the pipeline builds that image from (when image_uri names only a
    repository, or nothing); it does the same.
    job_fields holds the CustomJob fields outside its spec (labels, encryptionSpec)
    for launch_custom_job and hyperparameter_sweep.
    """
    from trainpool.plan import plan_cluster as plan
    from trainpool.plan.report import markdown, warnings
    from trainpool.spec import apply_overrides, coerce_ints

    supplied = pipeline_image or (f"built from {pipeline_source}" if pipeline_source else "")

    request = apply_overrides(
        coerce_ints(cluster_request),
        worker_count=worker_count,
        machine_type=machine_type,
        accelerator_type=accelerator_type,
        accelerator_count=accelerator_count,
        reduction_server=reduction_server,
    )
    result = plan(
        request,
        location=location,
        tuning_env=tuning_env,
        allow_unknown_machine_types=allow_unknown_machine_types,
    ).to_dict()
    with open(plan_report.path, "w", encoding="utf-8") as report:
        report.write(markdown(result, pipeline_image=supplied))
    spec = result["customJobSpec"]
    sizing = result["reductionServer"]
    fields = result["customJob"]
    found = warnings(result, supplied)
    return spec["workerPoolSpecs"], spec, sizing or {}, found, bool(sizing), fields
