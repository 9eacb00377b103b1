"""What the emulator does with each field a client sets on what it creates: the rule table.

A :class:`Rule` gives an action and why: ``applied`` (the emulator does with it what Vertex
does; the why says where), ``refused`` (a Create that sets it answers INVALID_ARGUMENT naming
it and why) or ``logged`` (accepted, and the job's log says, when it is set, that it is not
applied and what happens instead). :data:`RULES` holds them by field path, over the four
resources of :data:`RESOURCES`; a rule on a field covers the fields under it unless a rule
of theirs says otherwise. :mod:`trainpool.emulator.field_coverage` walks the protos against
it and applies it to requests.
"""

from __future__ import annotations

from dataclasses import dataclass

import proto
from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hptj
from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google.cloud.aiplatform_v1.types import training_pipeline as tp

APPLIED, REFUSED, LOGGED = "applied", "refused", "logged"
RESOURCES: dict[str, type[proto.Message]] = {
    "custom_job": cj.CustomJob,
    "hyperparameter_tuning_job": hptj.HyperparameterTuningJob,
    "training_pipeline": tp.TrainingPipeline,
    "pipeline_job": pj.PipelineJob,
}
SPECS = (
    "custom_job.job_spec",
    "hyperparameter_tuning_job.trial_job_spec",
    "training_pipeline.training_task_inputs",
)
"""Where a ``CustomJobSpec`` sits (a custom task's inputs are one, as JSON); ``{spec}`` in a
rule stands for each."""


@dataclass(frozen=True)
class Rule:
    action: str
    why: str


LOCAL = "replicas run on this machine (its processes, or containers of its engine)"
_SPEC_RULES = {
    "worker_pool_specs.container_spec": Rule(
        APPLIED,
        "jobs/containers.py: a container of its image where the container engine has it "
        "(ENTRYPOINT, CMD, WORKDIR, ENV, USER; command and args override them), or of the "
        "container stand-in of a Vertex prebuilt image (stand_ins/prebuilt_bases.py, built once), "
        "else jobs/launches.py: its command runs in a process imitating the image (RUN steps "
        "not run); an image the engine lacks is not pulled",
    ),
    "worker_pool_specs.python_package_spec": Rule(
        APPLIED,
        "jobs/programs.py: where a container engine answers, in containers of the executor "
        "image (the engine's, or a prebuilt image's container stand-in), each replica pip "
        "installing the packages (gs:// at /gcs) then running python -m MODULE ARGS, as "
        "Vertex does; else jobs/packages.py: installed once per pool into the executor "
        "image's process stand-in",
    ),
    "worker_pool_specs.replica_count": Rule(APPLIED, "one local process or container per replica"),
    "worker_pool_specs.machine_spec": Rule(
        LOGGED,
        f"checked against the catalog by Vertex's rules (plan/); {LOCAL}, with its CPUs and "
        "memory (a container's memory is its machine type's); a container gets its pool's "
        "acceleratorCount of this machine's GPUs where the engine has the NVIDIA runtime, a "
        "process none, and the job log says which; whatever machine, partition, TPU topology "
        "or reservation is asked",
    ),
    "worker_pool_specs.disk_spec": Rule(
        LOGGED,
        f"checked by Vertex's rules; {LOCAL}: they write on the store's disk; left out, a "
        "CustomJob's or a sweep's pool is given Vertex's defaults (pd-ssd, hyperdisk-balanced "
        "on A3 Ultra; 100 GB: DiskSpec, machine_resources.proto; jobs/job_service.py)",
    ),
    "worker_pool_specs.nfs_mounts": Rule(
        REFUSED,
        "NFS shares are not mounted in local replicas; accepted: data in gs:// (at /gcs in "
        "every replica)",
    ),
    "worker_pool_specs.lustre_mounts": Rule(
        REFUSED,
        "Lustre instances are not mounted in local replicas; accepted: data in gs:// (at "
        "/gcs in every replica)",
    ),
    "scheduling.timeout": Rule(APPLIED, "jobs/replicas.py"),
    "scheduling.restart_job_on_worker_restart": Rule(APPLIED, "jobs/failure_rules.py"),
    "scheduling.disable_retries": Rule(APPLIED, "jobs/failure_rules.py"),
    "scheduling.strategy": Rule(APPLIED, "SPOT and FLEX_START jobs can be preempted on demand"),
    "scheduling.max_wait_duration": Rule(
        LOGGED, "the emulator has no FLEX_START wait: a job starts as soon as replica slots allow"
    ),
    "base_output_directory": Rule(APPLIED, "AIP_MODEL_DIR and the others (cluster_env)"),
    "enable_web_access": Rule(
        APPLIED,
        "each replica serves a shell in its directory and environment (jobs/web_access.py); "
        "its address is in web_access_uris",
    ),
    "persistent_resource_id": Rule(
        APPLIED,
        "the job runs on that PersistentResource's pools: refused unless it exists, is RUNNING "
        "and each worker pool's machine matches one of its pools with room for its replicas; "
        "waits QUEUED while they are in use (persistent/rules.py, persistent/resources.py)",
    ),
    "tensorboard": Rule(
        APPLIED,
        "tensorboards/uploads.py: AIP_TENSORBOARD_LOG_DIR is uploaded to it while the job runs, "
        "by the Vertex AI SDK's uploader, into the experiment named after the job; refused "
        "without service_account, as Vertex refuses it ('custom_job.job_spec.service_account "
        "must be specified when uploading to TensorBoard', kubeflow/pipelines#7123), and when "
        "it does not exist or is in another region (jobs/job_links.py)",
    ),
    "service_account": Rule(
        LOGGED,
        f"{LOCAL}, run as this machine's user; Cloud Storage and the Vertex AI API are "
        "reached through the emulator's doors, whatever the account",
    ),
    "network": Rule(LOGGED, f"{LOCAL}, on this machine's network"),
    "reserved_ip_ranges": Rule(LOGGED, f"{LOCAL}, on this machine's network"),
    "psc_interface_config": Rule(LOGGED, f"{LOCAL}, on this machine's network"),
    "protected_artifact_location_id": Rule(
        LOGGED, "artifacts stay in the emulator's store, whatever the location"
    ),
    "enable_dashboard_access": Rule(
        LOGGED, "no dashboard is proxied; enable_web_access gives a shell into each replica"
    ),
    "experiment": Rule(
        APPLIED,
        "AIP_EXPERIMENT_NAME in every replica (jobs/vertex_access.py), so the SDK in the "
        "trainer logs to it; refused without service_account, as the SDK documents it, and "
        "when it is not an Experiment of the job's location (jobs/job_links.py); a CustomJob "
        "without experiment_run gets a run of it, named after the job and written into "
        "experiment_run, as Vertex auto-generates one (the SDK's CustomJob.run)",
    ),
    "experiment_run": Rule(
        APPLIED,
        "AIP_EXPERIMENT_RUN_NAME in every replica (jobs/vertex_access.py); refused without "
        "experiment or when it is not a run of that Experiment (jobs/job_links.py)",
    ),
    "models": Rule(LOGGED, "no model is mapped to artifact URIs for the job"),
}
_RULES = {
    # CustomJob
    "custom_job.display_name": Rule(APPLIED, "stored"),
    "custom_job.labels": Rule(APPLIED, "stored; List filters on them"),
    "custom_job.encryption_spec": Rule(LOGGED, "nothing is encrypted with the key locally"),
    # HyperparameterTuningJob
    "hyperparameter_tuning_job.display_name": Rule(APPLIED, "stored"),
    "hyperparameter_tuning_job.labels": Rule(APPLIED, "stored; List filters on them"),
    "hyperparameter_tuning_job.max_trial_count": Rule(APPLIED, "sweeps/sweep.py"),
    "hyperparameter_tuning_job.parallel_trial_count": Rule(APPLIED, "sweeps/sweep.py"),
    "hyperparameter_tuning_job.max_failed_trial_count": Rule(APPLIED, "sweeps/trial_rules.py"),
    "hyperparameter_tuning_job.encryption_spec": Rule(
        LOGGED, "nothing is encrypted with the key locally"
    ),
    "hyperparameter_tuning_job.study_spec": Rule(
        APPLIED, "sweeps/ (suggestions, trial rules, stopping rules)"
    ),
    "hyperparameter_tuning_job.study_spec.observation_noise": Rule(
        REFUSED,
        "'Currently only supported by the Vertex AI Vizier service. Not supported by "
        "HyperparameterTuningJob or TrainingPipeline' (study.proto); plan/study_field_rules.py",
    ),
    "hyperparameter_tuning_job.study_spec.parameters.double_value_spec.default_value": Rule(
        REFUSED, "not supported by HyperparameterTuningJob (study.proto); plan/study_field_rules.py"
    ),
    "hyperparameter_tuning_job.study_spec.parameters.integer_value_spec.default_value": Rule(
        REFUSED, "not supported by HyperparameterTuningJob (study.proto); plan/study_field_rules.py"
    ),
    "hyperparameter_tuning_job.study_spec.parameters.categorical_value_spec.default_value": Rule(
        REFUSED, "not supported by HyperparameterTuningJob (study.proto); plan/study_field_rules.py"
    ),
    "hyperparameter_tuning_job.study_spec.parameters.discrete_value_spec.default_value": Rule(
        REFUSED, "not supported by HyperparameterTuningJob (study.proto); plan/study_field_rules.py"
    ),
    "hyperparameter_tuning_job.study_spec.study_stopping_config": Rule(
        LOGGED,
        "sweeps/unapplied_study_fields.py: the sweep runs until max_trial_count trials have run",
    ),
    "hyperparameter_tuning_job.study_spec.metrics.safety_config": Rule(
        LOGGED, "sweeps/unapplied_study_fields.py: no trial is judged safe or unsafe"
    ),
    "hyperparameter_tuning_job.study_spec.convex_automated_stopping_spec.learning_rate_parameter_name": Rule(  # noqa: E501
        LOGGED, "sweeps/unapplied_study_fields.py: Vertex's autoregression model is not published"
    ),
    "hyperparameter_tuning_job.study_spec.convex_automated_stopping_spec.update_all_stopped_trials": Rule(  # noqa: E501
        LOGGED, "sweeps/unapplied_study_fields.py: Vertex's autoregression model is not published"
    ),
    # TrainingPipeline
    "training_pipeline.display_name": Rule(APPLIED, "stored; names the backing CustomJob"),
    "training_pipeline.labels": Rule(APPLIED, "stored; given to the backing CustomJob"),
    "training_pipeline.training_task_definition": Rule(
        APPLIED, "the custom task (pipelines/training.py); other tasks are refused"
    ),
    "training_pipeline.training_task_inputs": Rule(
        APPLIED, "the backing CustomJob's spec (pipelines/training.py)"
    ),
    "training_pipeline.model_to_upload": Rule(
        APPLIED,
        "registered in the Model Registry when the pipeline succeeds, as given, its "
        "version_aliases checked at create by Vertex's rule and 'default' added "
        "(model_registry/models.py); nothing is served",
    ),
    "training_pipeline.model_id": Rule(
        APPLIED,
        "the registered model's id; checked at create by Vertex's rule: up to 63 of "
        "[a-z0-9_-], the first not a digit or '-' (model_registry/models.py)",
    ),
    "training_pipeline.input_data_config": Rule(
        REFUSED,
        "managed datasets are not emulated (DatasetService is not served), so no "
        "AIP_TRAINING_DATA_URI is made; accepted: no input_data_config, data in gs://",
    ),
    "training_pipeline.parent_model": Rule(
        APPLIED,
        "the model is uploaded as the next version of that Model (model_registry/models.py)",
    ),
    "training_pipeline.encryption_spec": Rule(LOGGED, "nothing is encrypted with the key locally"),
    # PipelineJob
    "pipeline_job.display_name": Rule(APPLIED, "stored"),
    "pipeline_job.labels": Rule(APPLIED, "stored; given to the run's jobs"),
    "pipeline_job.pipeline_spec": Rule(APPLIED, "run with kfp.local (kfp_local/)"),
    "pipeline_job.runtime_config.gcs_output_directory": Rule(APPLIED, "the pipeline root"),
    "pipeline_job.runtime_config.parameter_values": Rule(APPLIED, "the pipeline's parameters"),
    "pipeline_job.runtime_config.parameters": Rule(
        APPLIED,
        "the parameters of a pipeline of schemaVersion 2.0.0 or lower (kfp 1.8's v2 "
        "compiler), which Vertex binds from this field ('Deprecated. Use "
        "RuntimeConfig.parameter_values instead', pipeline_job.proto); refused for a newer "
        "schema, and parameter_values for an older one, as Vertex fails a run whose field "
        "and schema disagree (spec/kfp_v1.py)",
    ),
    "pipeline_job.runtime_config.failure_policy": Rule(
        LOGGED, "kfp.local runs tasks one at a time and stops at the first failure"
    ),
    "pipeline_job.runtime_config.input_artifacts": Rule(
        REFUSED,
        "a local run cannot be given a stored ML Metadata artifact as a pipeline input; "
        "accepted: parameters (a gs:// URI as a string parameter)",
    ),
    "pipeline_job.encryption_spec": Rule(LOGGED, "nothing is encrypted with the key locally"),
    "pipeline_job.service_account": Rule(
        LOGGED,
        "tasks run as this machine's user, with the emulator as their Vertex; left empty, it "
        "is set to the project's default compute service account, "
        "0-compute@developer.gserviceaccount.com, as Vertex sets it (pipeline_job.proto)",
    ),
    "pipeline_job.network": Rule(LOGGED, "tasks run on this machine's network"),
    "pipeline_job.reserved_ip_ranges": Rule(LOGGED, "tasks run on this machine's network"),
    "pipeline_job.psc_interface_config": Rule(LOGGED, "tasks run on this machine's network"),
    "pipeline_job.template_uri": Rule(
        LOGGED,
        "the Template Registry is not emulated: only pipeline_spec runs (an empty one is refused)",
    ),
    "pipeline_job.preflight_validations": Rule(
        LOGGED, "no preflight validation is made beyond the emulator's own checks"
    ),
}
RULES: dict[str, Rule] = {
    **_RULES,
    **{f"{spec}.{path}": rule for spec in SPECS for path, rule in _SPEC_RULES.items()},
    "hyperparameter_tuning_job.trial_job_spec.tensorboard": Rule(
        LOGGED,
        "a sweep's trials' TensorBoard logs are not uploaded: they stay in each trial's "
        "AIP_TENSORBOARD_LOG_DIR (a CustomJob's are uploaded); refused without "
        "service_account, as Vertex refuses it (kubeflow/pipelines#7123)",
    ),
}
"""Each rule by the path it sits on (``{spec}`` rules are repeated at every spec)."""
