"""The distributed-training pipeline: plan, size, build, then train or sweep.

plan_cluster → size_reduction_server (re-sizes the planned Reduction Server; the spec
it returns is the one launched) → build_image → launch_custom_job, or
hyperparameter_sweep when max_trial_count > 0 → select_model → with a serving_image,
promote_model (the retraining gate: a new version of the Model, blessed only when better).

The cluster request is one parameter (a dict); the usual knobs are flat parameters
that override it, so a scheduled run or a submit can change the cluster without
recompiling. Those knobs are plan_cluster's and size_reduction_server's own inputs,
declared there once and passed on (:func:`pipelines.inputs.inputs_of`). The defaults
train examples/pytorch_ddp on 1 primary + 2 workers with a
4-trial grid over the learning rate, 2 trials at a time, on a laptop (CPU only).

Compile with ``trainpool compile``; run locally with
``trainpool run pipelines/distributed_training.yaml --local``.
"""

# No `from __future__ import annotations`: KFP reads the parameter annotations as types.
from typing import NamedTuple

from google_cloud_pipeline_components.types.artifact_types import UnmanagedContainerModel
from kfp import dsl

from components.build_image import build_image
from components.hyperparameter_sweep import hyperparameter_sweep
from components.launch_custom_job import launch_custom_job
from components.plan_cluster import plan_cluster
from components.promote_model import promote_model
from components.select_model import select_model
from components.size_reduction_server import size_reduction_server
from pipelines.inputs import inputs_of

DEFAULT_REQUEST: dict = {
    "primary": {"machine_type": "n1-standard-4"},
    "workers": {"replica_count": 2, "machine_type": "n1-standard-4"},
    "args": ["--epochs=2"],
}


TRAIN_RETRIES = 2
"""Retries of the train and sweep tasks, for SPOT and FLEX_START preemptions (each retry
creates the job's next attempt, which resumes from its checkpoint). Change it and
recompile: KFP takes a retry count at compile time only."""


class Outputs(NamedTuple):
    plan: dsl.Markdown
    gcp_resources: str
    model: UnmanagedContainerModel
    outcome: dict


DEFAULT_STUDY: dict = {
    "metrics": {"loss": "minimize"},
    "parameters": {"lr": {"type": "discrete", "values": [0.001, 0.003, 0.01, 0.1]}},
    "algorithm": "grid",
}


CLUSTER_KNOBS = (
    "worker_count",
    "machine_type",
    "accelerator_type",
    "accelerator_count",
    "reduction_server",
    "tuning_env",
)
"""plan_cluster's inputs that override the cluster request."""
SIZING_KNOBS = ("reducer_machine_type", "gradient_size_mb")
"""size_reduction_server's inputs: the reducers' machine type ("auto": the cheapest per
Gbps) and the gradients all-reduced per step."""
GATE_KNOBS = ("metric", "goal", "min_improvement", "alias", "on_worse")
"""promote_model's inputs, the pipeline's gate_metric, gate_goal, ...: which metric, its
direction, the least improvement that counts, the alias a better model gets, and what
becomes of a worse or equal one ("keep": an unpromoted version; "skip": not uploaded)."""


@dsl.pipeline(
    name="distributed-training",
    description="Plan a Vertex training cluster, build the trainer image, and train or sweep.",
)
@inputs_of(promote_model, GATE_KNOBS, after="serving_image", prefix="gate_")
@inputs_of(size_reduction_server, SIZING_KNOBS, after="cluster_request")
@inputs_of(plan_cluster, CLUSTER_KNOBS, after="cluster_request")
def distributed_training(
    # the pipeline run's own project and region, as Google's own pipelines default them
    # (GCPC v1/model_evaluation/evaluation_feature_attribution_pipeline.py)
    project: str = "{{$.pipeline_google_cloud_project_id}}",
    location: str = "{{$.pipeline_google_cloud_location}}",
    display_name: str = "distributed-training",
    cluster_request: dict = DEFAULT_REQUEST,
    source_dir: str = "",
    image_uri: str = "",
    framework: str = "pytorch",
    build_backend: str = "auto",
    study: dict = DEFAULT_STUDY,
    max_trial_count: int = 4,
    parallel_trial_count: int = 2,
    max_failed_trial_count: int = 0,
    early_stopping: dict = {},  # noqa: B006 (KFP compiles the default into the spec)
    base_output_directory: str = "",
    service_account: str = "",
    serving_image: str = "",
    **knobs,
) -> Outputs:
    """Train on Vertex AI from a readable cluster request.

    Knobs: worker_count, machine_type (primary and workers), accelerator_type and
    accelerator_count override the request when not -1 / ""; reduction_server is
    "request", "on" or "off" (plan_cluster's inputs); reducer_machine_type ("" keeps the
    plan's, "auto" the cheapest per Gbps) and gradient_size_mb re-size a planned Reduction
    Server (size_reduction_server's inputs). source_dir is the trainer to build into image_uri: a
    local folder, which `trainpool submit` and `trainpool run --local` upload under the
    pipeline root as gs://.../trainpool/sources/<digest>.tar.gz, or such a URI
    (`trainpool upload-source`); image_uri "" is LOCATION-docker.pkg.dev/PROJECT/trainpool/
    trainer. With source_dir "" the image_uri is used as given (no build). project and
    location default to the pipeline run's.
    max_trial_count 0 runs one CustomJob instead of a sweep; early_stopping ({"median": {}},
    {"decay_curve": {}}, {"convex": {...}}, {"none": {}}; {} keeps the study's) stops a
    sweep's hopeless trials early. Every run writes under
    <base_output_directory or pipeline root>/<run id>/. The train or sweep task is retried
    TRAIN_RETRIES times (a preempted job's next attempt resumes from its checkpoint).
    Outputs the plan report, the gcp_resources that name the job (the sweep's or the
    single job's), the model (the job's, or the best trial's; typed for GCPC's
    ModelUploadOp), and the outcome (job, state, model URI; for a sweep the best trial,
    its parameters and metric, and every trial). With serving_image, the model goes through
    the retraining gate (promote_model): it becomes a new version of the Model named
    display_name, and gets the gate_alias ("blessed"), only when its gate_metric beats the
    blessed version's (gate_goal "minimize" or "maximize", by at least gate_min_improvement);
    a worse or equal one is kept unpromoted (gate_on_worse "keep") or not uploaded ("skip").
    """
    plan = plan_cluster(
        cluster_request=cluster_request,
        location=location,
        pipeline_image=image_uri,  # build_image's target, or the image used as given
        pipeline_source=source_dir,
        **{name: knobs[name] for name in CLUSTER_KNOBS},
    ).set_display_name("plan cluster")
    job_fields = plan.outputs["job_fields"]
    sized = size_reduction_server(
        custom_job_spec=plan.outputs["custom_job_spec"],
        location=location,
        only_if_planned=True,
        **{name: knobs[name] for name in SIZING_KNOBS},
    ).set_display_name("size reduction server")
    spec = sized.outputs["custom_job_spec"]

    image = build_image(
        source_dir=source_dir,
        image_uri=image_uri,
        framework=framework,
        reduction_server=plan.outputs["has_reduction_server"],
        backend=build_backend,
        project=project,
        location=location,
    ).set_display_name("build image")
    image.after(plan)
    built = image.outputs["image_uri"]

    with dsl.If(max_trial_count > 0, name="sweep"):
        sweep = (
            hyperparameter_sweep(
                project=project,
                location=location,
                display_name=display_name,
                custom_job_spec=spec,
                study=study,
                max_trial_count=max_trial_count,
                parallel_trial_count=parallel_trial_count,
                max_failed_trial_count=max_failed_trial_count,
                early_stopping=early_stopping,
                image_uri=built,
                job_fields=job_fields,
                base_output_directory=base_output_directory,
                service_account=service_account,
                serving_image=serving_image,
            )
            .set_display_name("hyperparameter sweep")
            .set_caching_options(False)
            .set_retry(num_retries=TRAIN_RETRIES, backoff_duration="0s")
        )
    with dsl.Else(name="single-job"):
        launch = (
            launch_custom_job(
                project=project,
                location=location,
                display_name=display_name,
                custom_job_spec=spec,
                image_uri=built,
                job_fields=job_fields,
                base_output_directory=base_output_directory,
                service_account=service_account,
                serving_image=serving_image,
            )
            .set_display_name("launch custom job")
            .set_caching_options(False)
            .set_retry(num_retries=TRAIN_RETRIES, backoff_duration="0s")
        )
    outcome = dsl.OneOf(sweep.outputs["outcome"], launch.outputs["outcome"])
    model = select_model(outcome=outcome, serving_image=serving_image).set_display_name("model")
    with dsl.If(serving_image != "", name="register-model"):
        promote_model(
            project=project,
            location=location,
            display_name=display_name,
            model=model.outputs["model"],
            outcome=outcome,
            serving_image=serving_image,
            **{name: knobs["gate_" + name] for name in GATE_KNOBS},
        ).set_display_name("retraining gate").set_caching_options(False)
    return Outputs(
        plan=plan.outputs["plan_report"],
        gcp_resources=dsl.OneOf(sweep.outputs["gcp_resources"], launch.outputs["gcp_resources"]),
        model=model.outputs["model"],
        outcome=outcome,
    )
