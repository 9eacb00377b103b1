"""The lineage of Vertex ML Metadata as the API answers it: an Execution's inputs and
outputs, a Context's lineage subgraph, and what an Artifact reaches through events
(``QueryExecutionInputsAndOutputs``, ``QueryContextLineageSubgraph``,
``QueryArtifactLineageSubgraph``), each a ``LineageSubgraph``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.cloud.aiplatform_v1.types import lineage_subgraph as lineage_types

from trainpool.emulator.metadata import filters
from trainpool.emulator.metadata.matching import subject
from trainpool.emulator.metadata.metadata_records import MetadataRecords
from trainpool.emulator.records.kinds import ARTIFACTS, CONTEXTS, EXECUTIONS
from trainpool.emulator.records.resources import Records

MAX_HOPS = 100


def inputs_and_outputs(metadata: MetadataRecords, execution: str) -> Any:
    """QueryExecutionInputsAndOutputs: the execution, its artifacts and their events."""
    found = metadata.require(EXECUTIONS, execution)
    events = metadata.links.events("execution", [execution])
    return _subgraph(metadata.records, [e.artifact for e in events], [found.name], events)


def context_subgraph(metadata: MetadataRecords, context: str) -> Any:
    """QueryContextLineageSubgraph: the Context's Artifacts and Executions and the
    events between them."""
    metadata.require(CONTEXTS, context)
    artifacts = metadata.links.members(context, "artifact")
    executions = metadata.links.members(context, "execution")
    events = [
        e for e in metadata.links.events("execution", executions) if e.artifact in set(artifacts)
    ]
    return _subgraph(metadata.records, artifacts, executions, events)


def artifact_subgraph(metadata: MetadataRecords, artifact: str, max_hops: int, filter: str) -> Any:
    """QueryArtifactLineageSubgraph: what is reachable from ``artifact`` through events
    within ``max_hops`` (-1: no bound) hops, Artifacts limited to ``filter``."""
    metadata.require(ARTIFACTS, artifact)
    keep = filters.parse(filter, subject(metadata.links, ARTIFACTS))
    hops = MAX_HOPS if max_hops < 0 else min(max_hops, MAX_HOPS)
    artifacts: set[str] = {artifact}
    executions: set[str] = set()
    events: dict[tuple[str, str, int], Any] = {}
    frontier = {artifact}
    for _ in range(hops if hops else 0):
        found = metadata.links.events("artifact", frontier)
        next_executions = {e.execution for e in found} - executions
        executions |= next_executions
        linked = metadata.links.events("execution", next_executions)
        for event in [*found, *linked]:
            events[(event.execution, event.artifact, int(event.type_))] = event
        frontier = {e.artifact for e in linked} - artifacts
        artifacts |= frontier
        if not frontier:
            break
    kept = [
        a for a in artifacts if (r := metadata.records.get(ARTIFACTS, a)) is not None and keep(r)
    ]
    chosen = set(kept)
    return _subgraph(
        metadata.records,
        kept,
        sorted(executions),
        [e for e in events.values() if e.artifact in chosen],
    )


def _subgraph(
    records: Records, artifacts: Iterable[str], executions: Iterable[str], events: list[Any]
) -> Any:
    found_artifacts = [
        r for a in dict.fromkeys(artifacts) if (r := records.get(ARTIFACTS, a)) is not None
    ]
    found_executions = [
        r for x in dict.fromkeys(executions) if (r := records.get(EXECUTIONS, x)) is not None
    ]
    return lineage_types.LineageSubgraph(
        artifacts=found_artifacts, executions=found_executions, events=events
    )
