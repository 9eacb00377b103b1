"""What a job's Experiment, ExperimentRun and Tensorboard must be for the job to be created.

A CustomJob (or a sweep's trial spec) may name them (``CustomJobSpec.experiment``,
``experiment_run``, ``tensorboard``, ``aiplatform_v1/types/custom_job.py``). Checked here,
each an INVALID_ARGUMENT naming the field, the value and what is accepted:

- ``experiment``: a Context of the job's location whose schema is ``system.Experiment``
  ("Format: projects/{project}/locations/{location}/metadataStores/{metadataStores}/
  contexts/{experiment-name}");
- ``experiment_run``: only with ``experiment`` ("This arg can only be set when
  `experiment` is set", the SDK's ``CustomJob.run``), a ``system.ExperimentRun`` Context
  that is a child of that experiment;
- ``tensorboard`` (where the emulator uploads to it, ``check_tensorboard``): a Tensorboard
  that exists, in the job's region ("The bucket must be regional ... and the following
  resources must be in same region: Cloud Storage bucket, Vertex AI training job, Vertex AI
  TensorBoard instance", https://cloud.google.com/vertex-ai/docs/experiments/tensorboard-setup).

The service account Vertex requires with a Tensorboard or an Experiment is checked with
the request's other fields (:func:`trainpool.emulator.field_coverage.refusals`).

A CustomJob that names an ``experiment`` and no ``experiment_run`` is given a run
(:func:`attach_run`): "If 'experiment' is set but 'experiment_run` is not, an ExperimentRun
resource will still be auto-generated" (the Vertex AI SDK's ``CustomJob.run`` docstring,
google-cloud-aiplatform 1.165.1 ``jobs.py``), and its name is written into
``job_spec.experiment_run`` ("Format: .../metadataStores/{metadataStores}/contexts/
{experiment-name}-{experiment-run-name}", ``CustomJobSpec.experiment_run``, custom_job.proto).
The run is a ``system.ExperimentRun`` Context made as the SDK makes one
(``ExperimentRun.create``, ``metadata/experiment_run_resource.py``: id
``{experiment}-{run}``, display name the run's, metadata ``_params``, ``_metrics`` and
``_state`` RUNNING, a child of the experiment), so ``aiplatform.ExperimentRun.list
(experiment=...)`` finds it; its name is the job's id, as how Vertex names it is not
published. The SDK marks it COMPLETE when the job ends (``_block_until_complete``).
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import context as context_types
from google.protobuf import struct_pb2

from trainpool.emulator.metadata.metadata_records import MetadataRecords
from trainpool.emulator.records.kinds import CONTEXTS, CUSTOM_JOBS, TENSORBOARDS
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError, brief


def check(state: EmulatorState, spec: dict[str, Any], location: str, field: str) -> None:
    """The experiment links of ``spec`` (REST JSON) for a job in ``location``."""
    experiment = spec.get("experiment", "")
    run = spec.get("experimentRun", "")
    if run and not experiment:
        raise InputError.of(
            f"{field}.experiment_run",
            f"{brief(run)} is set without experiment; accepted: an experiment_run with the "
            "experiment it belongs to",
        )
    if experiment:
        found = _context(state, experiment, location, f"{field}.experiment", "system.Experiment")
        if run:
            child = _context(
                state, run, location, f"{field}.experiment_run", "system.ExperimentRun"
            )
            if found.name not in child.parent_contexts:
                raise InputError.of(
                    f"{field}.experiment_run",
                    f"{brief(run)} is not a run of {experiment}; accepted: a run of the "
                    "job's experiment",
                )


RUN_SCHEMA = "system.ExperimentRun"
RUN_SCHEMA_VERSION = "0.0.1"
MAX_CONTEXT_ID = 128


def attach_run(state: EmulatorState, records: MetadataRecords, job: Any) -> Any:
    """Make a run of ``job``'s experiment named after the job, write it into the stored job's
    ``job_spec.experiment_run``, and return the stored job (module docstring)."""
    experiment = job.job_spec.experiment
    store, _, experiment_id = experiment.rpartition("/contexts/")
    run_name = job.name.rsplit("/", 1)[-1]
    run_id = f"{experiment_id[: MAX_CONTEXT_ID - len(run_name) - 1]}-{run_name}"
    metadata = struct_pb2.Struct()
    metadata.update({"_params": {}, "_metrics": {}, "_state": "RUNNING"})
    context = context_types.Context(
        display_name=run_name, schema_title=RUN_SCHEMA, schema_version=RUN_SCHEMA_VERSION
    )
    context_types.Context.pb(context).metadata.CopyFrom(metadata)
    run = records.create(CONTEXTS, store, run_id, context, "context_id", trusted=True)
    records.links.add_children(experiment, [run.name])

    def change(stored: Any) -> None:
        stored.job_spec.experiment_run = run.name

    return state.records.update(CUSTOM_JOBS, job.name, change, stamp=False)


def check_tensorboard(
    state: EmulatorState, spec: dict[str, Any], location: str, field: str
) -> None:
    """The Tensorboard of ``spec`` exists, in ``location``."""
    name = spec.get("tensorboard", "")
    if not name:
        return
    parts = name.split("/")
    shape = "projects/PROJECT/locations/LOCATION/tensorboards/ID"
    if (
        len(parts) != 6
        or parts[0] != "projects"
        or parts[2] != "locations"
        or parts[4] != "tensorboards"
    ):
        raise InputError.of(f"{field}.tensorboard", f"{brief(name)}; accepted: {shape}")
    if parts[3] != location:
        raise InputError.of(
            f"{field}.tensorboard",
            f"{brief(name)} is in {parts[3]}, the job in {location}; accepted: a Tensorboard "
            "of the job's region (Vertex requires them in the same region)",
        )
    if state.records.get(TENSORBOARDS, name) is None:
        raise InputError.of(
            f"{field}.tensorboard",
            f"{brief(name)} does not exist; accepted: a Tensorboard of this project "
            "(aiplatform.Tensorboard.create())",
        )


def _context(state: EmulatorState, name: str, location: str, field: str, schema: str) -> Any:
    parts = name.split("/")
    if len(parts) != 8 or parts[2] != "locations" or parts[6] != "contexts":
        raise InputError.of(
            field,
            f"{brief(name)}; accepted: projects/PROJECT/locations/LOCATION/metadataStores/"
            "STORE/contexts/ID",
        )
    if parts[3] != location:
        raise InputError.of(
            field, f"{brief(name)} is in {parts[3]}, the job in {location}; accepted: the job's"
        )
    found = state.records.get(CONTEXTS, name)
    if found is None or found.schema_title != schema:
        what = "does not exist" if found is None else f"is a {found.schema_title}"
        raise InputError.of(field, f"{brief(name)} {what}; accepted: a {schema} Context")
    return found
