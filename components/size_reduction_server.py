"""KFP component: put a sized Reduction Server into a planned CustomJobSpec."""

from typing import NamedTuple

from kfp import dsl
from kfp.dsl import Markdown, Output

from trainpool.config import COMPONENTS_IMAGE


@dsl.component(base_image=COMPONENTS_IMAGE, install_kfp_package=False)
def size_reduction_server(
    custom_job_spec: dict,
    sizing_report: Output[Markdown],
    location: str = "us-central1",
    reducer_machine_type: str = "",
    gradient_size_mb: float = 100.0,
    only_if_planned: bool = False,
) -> NamedTuple("Outputs", replica_count=int, sizing=dict, custom_job_spec=dict):
    """Size reducers so their egress matches the GPU replicas' (pool 2 of the returned spec).

    reducer_machine_type "" keeps the planned Reduction Server (machine type and count) and
    reports it against the sizing rule (with none, n1-highcpu-16 reducers are sized); a
    machine type, or "auto" for the cheapest CPU machine per Gbps, re-sizes the pool.
    gradient_size_mb is the gradients all-reduced per step. only_if_planned: a spec without
    a Reduction Server is returned as it is, replica_count 0 (whether there is one is the
    plan's to say).
    Writes the sizing, cost and per-worker all-reduce traffic as Markdown to sizing_report.
    """
    from trainpool.cluster_env.layout import is_reduction_server
    from trainpool.plan import size_reduction_server as size
    from trainpool.plan.report import markdown
    from trainpool.spec import normalize_spec

    pools = normalize_spec(custom_job_spec).get("workerPoolSpecs", [])
    planned = len(pools) > 2 and bool(pools[2]) and is_reduction_server(pools[2])
    if only_if_planned and not planned:
        with open(sizing_report.path, "w", encoding="utf-8") as report:
            report.write(
                "# Reduction Server sizing\n\nNo Reduction Server is planned; the spec is kept.\n"
            )
        return 0, {}, custom_job_spec
    result = size(
        custom_job_spec,
        location=location,
        machine_type=reducer_machine_type,
        gradient_size_mb=gradient_size_mb,
    ).to_dict()
    with open(sizing_report.path, "w", encoding="utf-8") as report:
        report.write(markdown(result, title="Reduction Server sizing"))
    sizing = result["reductionServer"]
    return int(sizing["replicaCount"]), sizing, result["customJobSpec"]
