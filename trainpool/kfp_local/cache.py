"""Vertex AI Pipelines' execution cache: a task whose interface an earlier execution had is
skipped, and that execution's outputs are used.

What Vertex documents (https://cloud.google.com/vertex-ai/docs/pipelines/configure-caching):
the cache key of a step is the combination of

1. its inputs: the input parameters' values and the input artifacts' IDs;
2. its output definition: the output parameters' and output artifacts' names;
3. the component's specification: the image, commands, arguments and environment
   variables, in their order;

and "only the pipelines with the same pipeline name will share the cache". Caching is on
by default for every task (the compiled YAML's ``cachingOptions.enableCache``); a task
turns it off with ``set_caching_options(False)``, and ``PipelineJob(enable_caching=...)``
rewrites every task's setting before the job is sent (google-cloud-aiplatform
``pipeline_jobs.py``, ``_set_enable_caching_value``), so the emulator reads the task's own
setting only. A task's ``cache_key`` (kfp ``set_caching_options(cache_key=...)``) stands for
its interface, combined with its component's name as kfp.local's own cache does (kfp
``local/cache.py``).

Locally an artifact's ID is its URI (each output artifact has a URI of its own, and an
importer's artifact is the URI it imports). Entries are kept per project and location (a
Vertex ML Metadata store is per project and region) under ``<root>/pipeline-cache/``, one
JSON file per key, written only for a task that SUCCEEDED; a later edit of the component,
an input, the image, the command, an environment variable or the pipeline's name is
another key, and so misses. What invalidates an entry on Vertex, the deletion of its
execution from Vertex ML Metadata, has no local counterpart: deleting a file of
``<root>/pipeline-cache/`` does it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_ARTIFACT = "__artifact__"


def _plain(value: Any) -> Any:
    """``value`` as JSON: an artifact (``dsl.Artifact``) becomes its type, name, URI and
    metadata."""
    from kfp import dsl

    if isinstance(value, dsl.Artifact):
        return {
            _ARTIFACT: True,
            "schemaTitle": value.schema_title,
            "schemaVersion": value.schema_version,
            "name": value.name,
            "uri": value.uri,
            "metadata": dict(value.metadata),
        }
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _artifact(value: Any) -> Any:
    """The inverse of :func:`_plain`."""
    from kfp.dsl import executor

    if isinstance(value, dict) and value.get(_ARTIFACT):
        return executor.create_artifact_instance(
            {
                "name": value["name"],
                "uri": value["uri"],
                "metadata": value["metadata"],
                "type": {
                    "schemaTitle": value["schemaTitle"],
                    "schemaVersion": value["schemaVersion"],
                },
            }
        )
    if isinstance(value, list):
        return [_artifact(v) for v in value]
    return value


def key(
    scope: tuple[str, str, str],
    component_name: str,
    component: Mapping[str, Any],
    container: Mapping[str, Any],
    arguments: Mapping[str, Any],
    custom: str = "",
) -> str:
    """The cache key of a task: ``scope`` is (project, location, pipeline name),
    ``component`` the task's ComponentSpec and ``container`` its executor's container (both
    as JSON), ``arguments`` its inputs (values and artifacts), ``custom`` its own
    ``cache_key``."""
    digest = hashlib.sha256(json.dumps(list(scope)).encode())
    digest.update(b"\0" + component_name.encode())
    if custom:
        digest.update(b"\0custom\0" + custom.encode())
        return digest.hexdigest()
    outputs = component.get("outputDefinitions", {})
    interface = {
        "inputs": {
            name: (_plain(value) if not _is_artifact(value) else _ids(value))
            for name, value in sorted(arguments.items())
        },
        "outputs": {
            "parameters": {
                name: spec.get("parameterType", "")
                for name, spec in sorted(outputs.get("parameters", {}).items())
            },
            "artifacts": {
                name: spec.get("artifactType", {}).get("schemaTitle", "")
                for name, spec in sorted(outputs.get("artifacts", {}).items())
            },
        },
        "image": container.get("image", ""),
        "command": list(container.get("command", [])),
        "args": list(container.get("args", [])),
        "env": [[e.get("name", ""), e.get("value", "")] for e in container.get("env", [])],
    }
    digest.update(b"\0" + json.dumps(interface, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _is_artifact(value: Any) -> bool:
    from kfp import dsl

    return isinstance(value, dsl.Artifact) or (
        isinstance(value, list) and bool(value) and isinstance(value[0], dsl.Artifact)
    )


def _ids(value: Any) -> Any:
    """An input artifact as Vertex keys it: its ID, locally its URI."""
    if isinstance(value, list):
        return [_ids(v) for v in value]
    return {"artifact": value.uri}


class TaskCache:
    """The entries of one local store (``folder``), per project and location."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, cache_key: str) -> Path:
        return self.folder / f"{cache_key}.json"

    def get(self, cache_key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The outputs of the execution stored under ``cache_key`` and where they came from
        (``job``, ``task``); None when there is none."""
        try:
            entry = json.loads(self._path(cache_key).read_text(encoding="utf-8"))
            outputs = {name: _artifact(value) for name, value in entry["outputs"].items()}
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return outputs, dict(entry.get("source", {}))

    def put(self, cache_key: str, outputs: Mapping[str, Any], source: Mapping[str, Any]) -> None:
        """Keep ``outputs`` of a task that SUCCEEDED (written whole, then renamed)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        entry = {"outputs": {k: _plain(v) for k, v in outputs.items()}, "source": dict(source)}
        fd, partial = tempfile.mkstemp(prefix=".entry-", dir=self.folder)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(entry, handle, sort_keys=True)
        os.replace(partial, self._path(cache_key))
