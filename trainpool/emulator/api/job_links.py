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
"""

from __future__ import annotations

from typing import Any

from trainpool.emulator.records.kinds import CONTEXTS, TENSORBOARDS
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
