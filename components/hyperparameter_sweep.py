"""hyperparameter_sweep: run a Vertex HyperparameterTuningJob and report its best trial."""

from typing import NamedTuple

from google_cloud_pipeline_components.types.artifact_types import UnmanagedContainerModel
from kfp import dsl
from kfp.dsl import HTML, Artifact, Metrics, Output, OutputPath

from trainpool.config import COMPONENTS_IMAGE


@dsl.component(base_image=COMPONENTS_IMAGE, install_kfp_package=False)
def hyperparameter_sweep(
    project: str,
    location: str,
    display_name: str,
    custom_job_spec: dict,
    study: dict,
    max_trial_count: int,
    parallel_trial_count: int,
    gcp_resources: OutputPath(str),
    trials: Output[Artifact],
    trials_report: Output[HTML],
    metrics: Output[Metrics],
    model: Output[UnmanagedContainerModel],
    max_failed_trial_count: int = 0,
    image_uri: str = "",
    labels: dict = {},  # noqa: B006 (KFP compiles the default into the spec; never mutated)
    base_output_directory: str = "",
    timeout: str = "",
    service_account: str = "",
    strategy: str = "",
    job_fields: dict = {},  # noqa: B006 (KFP compiles the default into the spec)
    task_id: str = dsl.PIPELINE_TASK_ID_PLACEHOLDER,
    pipeline_root: str = dsl.PIPELINE_ROOT_PLACEHOLDER,
    run_id: str = dsl.PIPELINE_JOB_ID_PLACEHOLDER,
    serving_image: str = "",
    early_stopping: dict = {},  # noqa: B006 (KFP compiles the default into the spec)
) -> NamedTuple(
    "Outputs", best_trial_id=str, best_parameters=dict, best_metric_value=float, outcome=dict
):
    """Sweep custom_job_spec's trainer over study; report every trial and return the best.

    study is readable ({"metrics": {"accuracy": "maximize"}, "parameters": {"lr": {"type":
    "double", "min": 1e-4, "max": 0.1, "scale": "log"}}, "algorithm": "random"}) or a
    StudySpec in REST JSON; it is checked before anything is created. early_stopping
    ({"median": {}}, {"decay_curve": {...}}, {"convex": {...}} or {"none": {}}; {} keeps the
    study's own) replaces the study's automated stopping spec. job_fields is
    plan_cluster's output of the same name (labels, encryption key); labels given here win.
    Trials write under <base>/<run_id>/<trial id>/ (base as in launch_custom_job); a retry
    after the tuning job failed starts the next attempt. model is the best trial's model
    directory, typed for GCPC's ModelUploadOp; outcome holds the best trial, its parameters
    and metric, the model and every trial.
    """
    from trainpool.vertex import launch, sweep

    options = launch.Options(
        image_uri,
        base_output_directory,
        timeout,
        service_account,
        strategy,
        pipeline_root=pipeline_root,
        run_id=run_id,
    )
    job = sweep.tuning_job(
        display_name,
        custom_job_spec,
        study,
        max_trial_count=max_trial_count,
        parallel_trial_count=parallel_trial_count,
        max_failed_trial_count=max_failed_trial_count,
        options=options,
        user_labels=labels,
        task_id=task_id,
        job_fields=job_fields,
        early_stopping=early_stopping,
    )
    result = sweep.run_sweep(project, location, job, gcp_resources, task_id)
    sweep.write_reports(result, trials.path, trials_report.path)
    result.raise_for_state()
    best_id, best_parameters, best_value = result.best_outputs()
    metrics.log_metric(result.metric_id, best_value)
    metrics.log_metric("trials", len(result.trials))
    model.uri = result.model_uri
    model.metadata = launch.model_metadata(serving_image)
    return best_id, best_parameters, best_value, result.outcome
