"""No field of what a client creates is silently ignored (emulator/field_coverage.py).

The fields come from the aiplatform v1 protos (the proto-plus types and the "Output only."
of their documentation); every one is applied, refused or written to the job's log. One
test per field the emulator does not apply, generated from its list: set on a request that
is otherwise accepted, it is refused with INVALID_ARGUMENT naming it, or the job's log says
it is not applied.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fixtures.pipelines import compile_fixture
from fixtures.vertex import PARENT
from google.api_core import exceptions
from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hptj
from google.cloud.aiplatform_v1.types import pipeline_job as pj
from google.cloud.aiplatform_v1.types import training_pipeline as tp
from google.protobuf import json_format

import trainpool.emulator as emulator
from trainpool.emulator import field_coverage, field_rules
from trainpool.emulator.jobs.training_pipelines import CUSTOM_TASK
from trainpool.vertex.clients import job_client, pipeline_client

pytestmark = pytest.mark.timeout(120)
POOL = {
    "replica_count": 1,
    "machine_spec": {"machine_type": "n1-standard-4"},
    "container_spec": {"image_uri": "python:3.11", "command": ["true"]},
}
SPEC = {"worker_pool_specs": [POOL]}
MODEL = "projects/demo/locations/us-central1/models/1"
ACCOUNT = "trainer@demo.iam.gserviceaccount.com"
KEY = "projects/demo/locations/us-central1/keyRings/r/cryptoKeys/k"
NETWORK = "projects/12345/global/networks/default"
SAMPLES: dict[str, Any] = {
    "worker_pool_specs.machine_spec": {"machine_type": "n1-standard-4"},
    "worker_pool_specs.nfs_mounts": [{"server": "10.0.0.2", "path": "/d", "mount_point": "d"}],
    "worker_pool_specs.lustre_mounts": [{"instance_ip": "10.0.0.3", "mount_point": "l"}],
    "worker_pool_specs.disk_spec": {"boot_disk_type": "pd-ssd", "boot_disk_size_gb": 200},
    "scheduling.max_wait_duration": "600s",
    "service_account": ACCOUNT,
    "network": NETWORK,
    "reserved_ip_ranges": ["my-range"],
    "psc_interface_config": {"network_attachment": "projects/demo/regions/us-central1/na"},
    "protected_artifact_location_id": "us-central1",
    "tensorboard": "projects/demo/locations/us-central1/tensorboards/7",
    "enable_dashboard_access": True,
    "experiment": "projects/demo/locations/us-central1/metadataStores/default/contexts/e",
    "experiment_run": "projects/demo/locations/us-central1/metadataStores/default/contexts/r",
    "models": [MODEL],
    "encryption_spec": {"kms_key_name": KEY},
    # HyperparameterTuningJob studies
    "study_spec.convex_automated_stopping_spec.learning_rate_parameter_name": {
        "convex_automated_stopping_spec": {
            "max_step_count": 10,
            "min_step_count": 1,
            "learning_rate_parameter_name": "lr",
        }
    },
    "study_spec.convex_automated_stopping_spec.update_all_stopped_trials": {
        "convex_automated_stopping_spec": {"update_all_stopped_trials": True}
    },
    "study_spec.metrics.safety_config": {
        "metrics": [
            {"metric_id": "m", "goal": "MAXIMIZE", "safety_config": {"safety_threshold": 1}}
        ]
    },
    "study_spec.observation_noise": {"observation_noise": "HIGH"},
    "study_spec.study_stopping_config": {"study_stopping_config": {"should_stop_asap": True}},
    "study_spec.parameters.double_value_spec.default_value": {
        "parameters": [
            {
                "parameter_id": "lr",
                "double_value_spec": {"min_value": 0, "max_value": 1, "default_value": 0.5},
            }  # noqa: E501
        ]
    },
    "study_spec.parameters.integer_value_spec.default_value": {
        "parameters": [
            {
                "parameter_id": "lr",
                "integer_value_spec": {"min_value": 1, "max_value": 3, "default_value": 2},
            }  # noqa: E501
        ]
    },
    "study_spec.parameters.categorical_value_spec.default_value": {
        "parameters": [
            {
                "parameter_id": "lr",
                "categorical_value_spec": {"values": ["a", "b"], "default_value": "a"},
            }  # noqa: E501
        ]
    },
    "study_spec.parameters.discrete_value_spec.default_value": {
        "parameters": [
            {"parameter_id": "lr", "discrete_value_spec": {"values": [1, 2], "default_value": 1}}
        ]
    },
    # TrainingPipelines
    "input_data_config": {"dataset_id": "123"},
    "parent_model": MODEL,
    # PipelineJobs
    "runtime_config.failure_policy": "PIPELINE_FAILURE_POLICY_FAIL_FAST",
    "runtime_config.input_artifacts": {"data": {"artifact_id": "42"}},
    "template_uri": "https://us-central1-kfp.pkg.dev/demo/repo/tiny/v1",
    "preflight_validations": True,
}
"""A value for each field of the list, by its path below the resource (and below the job
spec for the CustomJobSpec's); a study's entries replace parts of the study."""


def sample(path: str) -> Any:
    for spec in field_rules.SPECS:
        if path.startswith(spec + "."):
            return SAMPLES[path[len(spec) + 1 :]]
    return SAMPLES[path.split(".", 1)[1]]


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("fields")
    with pytest.MonkeyPatch.context() as patch, emulator.start(root / "root") as running:
        patch.setenv("VERTEX_AI_EMULATOR_HOST", running.address)
        yield running


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    compiled = compile_fixture("tiny", tmp_path_factory.mktemp("tiny"))
    spec: dict[str, Any] = yaml.safe_load(compiled.read_text())
    return spec


def request(pipeline: dict[str, Any], resource: str, path: str) -> Any:
    """An accepted request of ``resource`` with the field at ``path`` set."""
    study = {
        "metrics": [{"metric_id": "m", "goal": "MAXIMIZE"}],
        "parameters": [
            {"parameter_id": "lr", "double_value_spec": {"min_value": 0, "max_value": 1}}
        ],
        "algorithm": "RANDOM_SEARCH",
    }
    spec = json.loads(json.dumps(SPEC))
    bodies: dict[str, dict[str, Any]] = {
        "custom_job": {"display_name": "f", "job_spec": spec},
        "hyperparameter_tuning_job": {
            "display_name": "f",
            "max_trial_count": 1,
            "parallel_trial_count": 1,
            "study_spec": study,
            "trial_job_spec": spec,
        },
        "training_pipeline": {
            "display_name": "f",
            "training_task_definition": CUSTOM_TASK,
            "training_task_inputs": spec,
        },
        "pipeline_job": {
            "display_name": "f",
            "pipeline_spec": pipeline,
            "runtime_config": {"gcs_output_directory": "gs://bkt/root"},
        },
    }
    body = bodies[resource]
    value = sample(path)
    parts = path.split(".")[1:]
    if parts[0] == "study_spec":
        study.update(value)
    else:
        target = body
        for part in parts[:-1]:
            found = target.setdefault(part, {})
            target = found[0] if isinstance(found, list) else found
        target[parts[-1]] = value
    if path.endswith(".tensorboard"):  # Vertex asks for a service account with it
        spec["service_account"] = ACCOUNT
    if path.endswith(".max_wait_duration"):  # only with FLEX_START (plan/pool_rules.py)
        spec["scheduling"]["strategy"] = "FLEX_START"
    types = {
        "custom_job": cj.CustomJob,
        "hyperparameter_tuning_job": hptj.HyperparameterTuningJob,
        "training_pipeline": tp.TrainingPipeline,
        "pipeline_job": pj.PipelineJob,
    }
    message = types[resource].pb(types[resource]())
    return types[resource].wrap(json_format.ParseDict(body, message))


def create(emu: Any, resource: str, message: Any) -> tuple[Any, Path]:
    """Create ``message``; the resource and the log its notes go to."""
    root = Path(emu.root)
    if resource == "custom_job":
        job = job_client("us-central1").create_custom_job(parent=PARENT, custom_job=message)
        return job, root / "jobs" / job.name.rsplit("/", 1)[1] / "job.log"
    if resource == "hyperparameter_tuning_job":
        job = job_client("us-central1").create_hyperparameter_tuning_job(
            parent=PARENT, hyperparameter_tuning_job=message
        )
        return job, root / "jobs" / job.name.rsplit("/", 1)[1] / "job.log"
    if resource == "training_pipeline":
        made = pipeline_client("us-central1").create_training_pipeline(
            parent=PARENT, training_pipeline=message
        )
        backing = made.training_task_metadata["backingCustomJob"].rsplit("/", 1)[1]
        return made, root / "jobs" / backing / "job.log"
    made = pipeline_client("us-central1").create_pipeline_job(parent=PARENT, pipeline_job=message)
    return made, root / "pipelines" / made.name.rsplit("/", 1)[1] / "run.log"


def camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def test_every_field_of_the_protos_is_applied_refused_logged_or_output() -> None:
    fields = field_coverage.coverage()
    unclassified = [f.path for f in fields if f.action == field_coverage.UNCLASSIFIED]
    assert not unclassified, unclassified
    paths = {f.path for f in fields}
    assert not set(field_rules.RULES) - paths  # no rule names a field the protos lack
    # Vertex's output fields are the service's: web_access_uris among them
    assert (
        field_coverage.Field(
            "custom_job.web_access_uris",
            field_coverage.OUTPUT,
            "output only: Vertex sets it, a client's value is dropped",
        )
        in fields
    )
    assert {f.path for f in field_coverage.unapplied()} >= {
        "custom_job.job_spec.network",
        "hyperparameter_tuning_job.trial_job_spec.tensorboard",
        "training_pipeline.input_data_config",
    }


@pytest.mark.parametrize("field", field_coverage.unapplied(), ids=lambda f: f.path)
def test_a_field_the_emulator_does_not_apply_is_refused_or_logged(
    emu: Any, pipeline: dict[str, Any], field: field_coverage.Field
) -> None:
    resource = field.path.split(".", 1)[0]
    message = request(pipeline, resource, field.path)
    last = field.path.rsplit(".", 1)[1]
    if field.action == field_rules.REFUSED:
        with pytest.raises(exceptions.InvalidArgument) as err:
            create(emu, resource, message)
        assert last in err.value.message or camel(last) in err.value.message
        return
    made, log = create(emu, resource, message)
    # a study's fields are said by the sweep in the study's words (sweeps/unapplied_study_fields.py)
    line = (
        f"studySpec.{camel(field.path.split('study_spec.', 1)[1])}".replace(
            ".metrics.", ".metrics[0]."
        )
        if field.why.startswith("sweeps/unapplied_study_fields.py")
        else f"{field.path} is not applied by the emulator: {field.why}"
    )
    deadline = time.monotonic() + 20
    said = ""
    while time.monotonic() < deadline and line not in said:
        said = log.read_text() if log.exists() else ""
        time.sleep(0.05)
    if resource == "pipeline_job":
        pipeline_client("us-central1").cancel_pipeline_job(name=made.name)
    assert line in said, said


def test_tensorboard_without_a_service_account_is_refused_as_vertex_refuses_it(emu: Any) -> None:
    # kubeflow/pipelines#7123 quotes JobService.CreateCustomJob: "custom_job.job_spec.
    # service_account must be specified when uploading to TensorBoard"
    spec = {**SPEC, "tensorboard": "projects/demo/locations/us-central1/tensorboards/7"}
    with pytest.raises(exceptions.InvalidArgument) as err:
        job_client("us-central1").create_custom_job(
            parent=PARENT, custom_job={"display_name": "tb", "job_spec": spec}
        )
    assert (
        "custom_job.job_spec.service_account: must be specified when uploading to TensorBoard"
        in err.value.message
    )
