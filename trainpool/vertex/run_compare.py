"""A pipeline's runs side by side, read from ML Metadata as ``get_pipeline_df`` reads them.

The SDK (google-cloud-aiplatform 1.165.1, ``metadata/metadata.py``,
``_LegacyExperimentService.get_pipeline_df`` and ``_query_runs_to_data_frame``): the
``system.Pipeline`` Context ``metadataStores/default/contexts/NAME``, the ``system.Run``
Executions ``in_context`` of it (one per run, display name the job's id), their metadata as
``param.KEY`` (the pipeline's parameters are ``input:NAME``), and each key of each of their
output artifacts' metadata as ``metric.KEY`` (``Execution.get_output_artifacts``: on Vertex,
and on the emulator, the metrics artifacts the run's tasks wrote). The same over
``trainpool.vertex.clients``, so Vertex or the emulator alike, with each run's state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

PIPELINE_SCHEMA = "system.Pipeline"
RUN_SCHEMA = "system.Run"


@dataclass
class RunRow:
    """One run: as a ``get_pipeline_df`` row (``columns``), with its execution's state."""

    run_name: str
    state: str
    columns: dict[str, Any] = field(default_factory=dict)


def _metadata(message: Any) -> dict[str, Any]:
    from google.protobuf import json_format

    raw = type(message).pb(message)
    if not raw.HasField("metadata"):
        return {}
    found: dict[str, Any] = json_format.MessageToDict(raw.metadata)
    return found


def pipeline_runs(pipeline: str, project: str, location: str) -> list[RunRow]:
    """The runs of ``pipeline`` (its name, as ``get_pipeline_df(pipeline=NAME)`` takes it).

    Raises ``InputError`` when the Context is not a pipeline's; ``NotFound`` when none."""
    from trainpool.errors import InputError
    from trainpool.vertex import clients

    client = clients.metadata_client(location)
    store = f"projects/{project}/locations/{location}/metadataStores/default"
    context = client.get_context(name=f"{store}/contexts/{pipeline}")
    if context.schema_title != PIPELINE_SCHEMA:
        raise InputError(f"{pipeline!r} is a {context.schema_title} context, not a pipeline's")
    where = f'schema_title="{RUN_SCHEMA}" AND in_context("{context.name}")'
    runs = client.list_executions(request={"parent": store, "filter": where})
    rows = []
    for execution in runs:
        columns = {f"param.{k}": v for k, v in _metadata(execution).items()}
        graph = client.query_execution_inputs_and_outputs(execution=execution.name)
        outputs = {
            e.artifact
            for e in graph.events
            if e.execution == execution.name and e.type_.name == "OUTPUT"
        }
        for artifact in graph.artifacts:
            if artifact.name in outputs:
                columns.update({f"metric.{k}": v for k, v in _metadata(artifact).items()})
        rows.append(RunRow(execution.display_name, execution.state.name, columns))
    return rows


def cell(value: Any) -> str:
    """A column's value in a table: scalars as they are, a confusion matrix as ``RxC
    matrix``, an ROC (``confidenceMetrics``) or other list as ``N points``."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, dict) and isinstance(value.get("rows"), list):
        specs = value.get("annotationSpecs") or []
        return f"{len(value['rows'])}x{len(specs)} matrix"
    if isinstance(value, list):
        return f"{len(value)} points"
    return json.dumps(value, sort_keys=True)
