"""Register a trained model in the Vertex AI Model Registry (ModelService.UploadModel)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainpool.errors import InputError
from trainpool.spec import gate as spec_gate
from trainpool.vertex import clients
from trainpool.vertex.launch import require

CALL_TIMEOUT_S = 300.0


def upload(
    project: str,
    location: str,
    display_name: str,
    artifact_uri: str,
    serving_image: str,
    labels: dict[str, str] | None = None,
) -> Any:
    """Upload the model at ``artifact_uri`` (a model directory) served by ``serving_image``;
    wait for the operation and return the registered ``Model``."""
    require(
        project=project,
        location=location,
        display_name=display_name,
        artifact_uri=artifact_uri,
        serving_image=serving_image,
    )
    from google.cloud import aiplatform_v1

    client = clients.model_client(location)
    model = aiplatform_v1.Model(
        display_name=display_name,
        artifact_uri=artifact_uri,
        container_spec=aiplatform_v1.ModelContainerSpec(image_uri=serving_image),
        labels=labels or {},
    )
    operation = client.upload_model(
        parent=f"projects/{project}/locations/{location}", model=model, timeout=CALL_TIMEOUT_S
    )
    name = operation.result(timeout=CALL_TIMEOUT_S).model
    return client.get_model(name=name, timeout=CALL_TIMEOUT_S)


# The retraining gate (the rules: trainpool.spec.gate) ------------------------------------

GATE_TRIES = 12
"""How many times the gate reads the blessed version back (and moves the alias again when a
worse rival moved it in between) before it gives up."""
SETTLE_S = 1.0
"""How long a promotion waits before it reads the alias back a second time: a rival run that
read the old blessed version before this one moved the alias has moved it by then, and the
better of the two then takes it back (the worse one sees the better and is kept)."""


@dataclass(frozen=True)
class Gate:
    """The gate's parameters (checked by :func:`trainpool.spec.gate.check`)."""

    metric: str = "loss"
    goal: str = "minimize"
    min_improvement: float = 0.0
    alias: str = "blessed"
    on_worse: str = "keep"

    def __post_init__(self) -> None:
        spec_gate.check(self.metric, self.goal, self.min_improvement, self.alias, self.on_worse)


def challenger_metric(outcome: dict[str, Any], metric: str) -> float:
    """The run's value of ``metric``: a sweep's best trial's (its ``bestMetricValue`` when it
    is the study's metric, else that trial's ``metrics``), else the ``metrics.json`` the
    trainer wrote beside its model (``{"loss": 0.41, ...}``: a single job's metric, which
    Vertex keeps nowhere else). InputError when none of them has it."""
    import json
    import os

    from trainpool.runtime.gcs import local_path

    if outcome.get("metricId") == metric and outcome.get("bestMetricValue") is not None:
        return float(outcome["bestMetricValue"])
    best = str(outcome.get("bestTrialId", ""))
    for trial in outcome.get("trials", []):
        if str(trial.get("id")) == best and metric in (trial.get("metrics") or {}):
            return float(trial["metrics"][metric])
    model_dir = str(outcome.get("modelUri", ""))
    path = os.path.join(local_path(model_dir), METRICS_FILE) if model_dir else ""
    try:
        with open(path, encoding="utf-8") as handle:
            return float(json.load(handle)[metric])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError.of(
            "metric",
            f"the run reported no {metric!r}: not the sweep's metric, and "
            f"{model_dir.rstrip('/')}/{METRICS_FILE} has none ({err.__class__.__name__}: {err}); "
            f"accepted: the study's metric, or a trainer that writes {METRICS_FILE} beside "
            "its model",
        ) from None


METRICS_FILE = "metrics.json"


def _versioned(model: Any) -> str:
    return f"{model.name.split('@')[0]}@{model.version_id}"


def _blessed(client: Any, model_name: str, alias: str) -> Any:
    from google.api_core import exceptions

    try:
        return client.get_model(name=f"{model_name}@{alias}", timeout=CALL_TIMEOUT_S)
    except exceptions.NotFound:
        return None


def _models(client: Any, parent: str, display_name: str) -> list[Any]:
    escaped = display_name.replace("\\", "\\\\").replace('"', '\\"')
    found = client.list_models(
        request={"parent": parent, "filter": f'display_name="{escaped}"'},
        timeout=CALL_TIMEOUT_S,
    )
    return sorted(found, key=lambda m: (m.create_time.timestamp(), m.name))


def _recorded(version: Any, gate: Gate) -> float:
    return spec_gate.recorded(dict(version.labels), gate.metric, _versioned(version))


def promote_if_better(
    project: str,
    location: str,
    display_name: str,
    artifact_uri: str,
    serving_image: str,
    challenger: float,
    gate: Gate,
    run: str = "",
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Register the model at ``artifact_uri`` as a new version of the Model named
    ``display_name`` (the oldest of that name; a new Model when there is none) and move
    ``gate.alias`` onto it only when ``challenger`` beats the blessed version's recorded
    metric (:func:`trainpool.spec.gate.compare`); a worse or equal one is kept unpromoted
    (``on_worse`` keep) or not uploaded (skip). Returns the verdict: ``decision``
    (``promoted``, ``kept`` or ``not-uploaded``), ``model`` (the version registered, or ""),
    ``blessedVersion``, both metrics and the improvement, and ``summary`` (one line).

    Two runs at once: the model is uploaded without the alias; the alias is moved by one
    MergeVersionAliases (atomic: it leaves its old version as it lands on the new one), only
    onto a version strictly better than the one holding it when read, and read back twice
    :data:`SETTLE_S` apart; a run that finds a rival holding it compares again, so the
    better run ends promoted, the other kept (an equal one too), never half-moved. Vertex has
    no compare-and-set on aliases: a rival whose read-to-move takes longer than SETTLE_S
    could still move it last."""
    require(
        project=project,
        location=location,
        display_name=display_name,
        artifact_uri=artifact_uri,
        serving_image=serving_image,
    )
    client = clients.model_client(location)
    parent = f"projects/{project}/locations/{location}"
    existing = _models(client, parent, display_name)
    model_name = existing[0].name.split("@")[0] if existing else ""
    blessed = _blessed(client, model_name, gate.alias) if model_name else None
    verdict = spec_gate.compare(
        gate.metric,
        gate.goal,
        challenger,
        _recorded(blessed, gate) if blessed else None,
        gate.min_improvement,
    )
    log(f"gate: {verdict.describe()}")
    mine = _registered_by(client, model_name, run) if model_name else None
    if mine is not None:
        log(f"gate: {_versioned(mine)} is this run's already (the gate is retried)")
        if blessed is not None and blessed.version_id == mine.version_id:
            retried = spec_gate.Verdict(gate.metric, gate.goal, challenger, None, 0.0, True)
            return _result("promoted", retried, _versioned(mine), None, gate, "it holds it already")
    elif not verdict.promote and gate.on_worse == "skip":
        return _result("not-uploaded", verdict, "", blessed, gate)
    else:
        mine = _upload_version(
            client, parent, model_name, display_name, artifact_uri, serving_image, challenger,
            gate, run,
        )  # fmt: skip
    if not model_name:  # a new Model: another run may have made one of the same name at once
        model_name = mine.name.split("@")[0]
        oldest = _models(client, parent, display_name)[0].name.split("@")[0]
        if oldest != model_name:
            log(f"gate: {oldest} was registered at the same time; this model joins it")
            client.delete_model(name=model_name, timeout=CALL_TIMEOUT_S).result()
            model_name = oldest
            mine = _upload_version(
                client, parent, model_name, display_name, artifact_uri, serving_image,
                challenger, gate, run,
            )  # fmt: skip
    against, seen = blessed, 0
    for _ in range(GATE_TRIES):
        blessed = _blessed(client, model_name, gate.alias)
        if blessed is not None and blessed.version_id == mine.version_id:
            seen += 1
            if seen == 2:
                return _result("promoted", verdict, _versioned(mine), against, gate)
            time.sleep(SETTLE_S)  # a rival that read the old blessed version moves it by now
            continue
        seen, against = 0, blessed
        verdict = spec_gate.compare(
            gate.metric,
            gate.goal,
            challenger,
            _recorded(blessed, gate) if blessed else None,
            gate.min_improvement,
        )
        if not verdict.promote:
            log(f"gate: kept {_versioned(mine)} unpromoted ({verdict.describe()})")
            return _result("kept", verdict, _versioned(mine), blessed, gate)
        client.merge_version_aliases(
            name=_versioned(mine), version_aliases=[gate.alias], timeout=CALL_TIMEOUT_S
        )
    raise RuntimeError(
        f"{model_name}@{gate.alias} moved {GATE_TRIES} times while this run promoted "
        f"{_versioned(mine)}; it is registered, unpromoted or blessed as GetModel now says"
    )


def _registered_by(client: Any, model_name: str, run: str) -> Any:
    """The version of ``model_name`` that run ``run`` registered (its run label), or None."""
    labels = spec_gate.metric_labels("m", "minimize", 0.0, run)
    if spec_gate.RUN_LABEL not in labels:
        return None
    for version in client.list_model_versions(name=model_name, timeout=CALL_TIMEOUT_S):
        if version.labels.get(spec_gate.RUN_LABEL) == run:
            return client.get_model(name=_versioned(version), timeout=CALL_TIMEOUT_S)
    return None


def _upload_version(
    client: Any,
    parent: str,
    model_name: str,
    display_name: str,
    artifact_uri: str,
    serving_image: str,
    value: float,
    gate: Gate,
    run: str,
) -> Any:
    """Upload a version (of ``model_name``; a new Model when "") recording ``value`` in its
    labels and description, without the alias; the version as GetModel returns it."""
    from google.cloud import aiplatform_v1

    model = aiplatform_v1.Model(
        display_name=display_name,
        artifact_uri=artifact_uri,
        container_spec=aiplatform_v1.ModelContainerSpec(image_uri=serving_image),
        labels=spec_gate.metric_labels(gate.metric, gate.goal, value, run),
        version_description=f"{gate.metric} {value!r} ({gate.goal}){' from ' + run if run else ''}",
    )
    operation = client.upload_model(
        request=aiplatform_v1.UploadModelRequest(
            parent=parent, parent_model=model_name, model=model
        ),
        timeout=CALL_TIMEOUT_S,
    )
    done = operation.result(timeout=CALL_TIMEOUT_S)
    return client.get_model(
        name=f"{done.model.split('@')[0]}@{done.model_version_id}", timeout=CALL_TIMEOUT_S
    )


def _result(
    decision: str,
    verdict: spec_gate.Verdict,
    model: str,
    blessed: Any,
    gate: Gate,
    why: str = "",
) -> dict[str, Any]:
    versioned = _versioned(blessed) if blessed is not None else ""
    if decision == "promoted":
        over = f" (was {versioned})" if versioned else ""
        summary = f"promoted {model} to @{gate.alias}{over}: {why or verdict.describe()}"
    else:
        kept = f"kept @{gate.alias} on {versioned}" if versioned else f"kept @{gate.alias}"
        what = f" ({model} registered unpromoted)" if model else " (not uploaded)"
        summary = f"{kept}: {verdict.describe()}{what}"
    return {
        "decision": decision,
        "winner": verdict.winner,
        "model": model,
        "alias": gate.alias,
        "blessedVersion": versioned,
        "metric": verdict.metric,
        "goal": verdict.goal,
        "challenger": verdict.challenger,
        "blessed": verdict.blessed,
        "improvement": verdict.improvement,
        "summary": summary,
    }


def find_model(model: str, project: str, location: str) -> str:
    """The resource name (``projects/P/locations/L/models/ID``) of ``model``: a resource
    name, an id, or a display name (the oldest Model of that name, as the gate takes it).
    InputError when there is none."""
    from google.api_core import exceptions

    client = clients.model_client(location)
    if "/" in model:
        if "/models/" not in model or "@" in model:
            raise InputError.of(
                "MODEL",
                f"{model!r}; accepted: projects/P/locations/L/models/ID, an ID, or a display name",
            )
        return str(client.get_model(name=model, timeout=CALL_TIMEOUT_S).name.split("@")[0])
    require(project=project)
    parent = f"projects/{project}/locations/{location}"
    try:
        found = client.get_model(name=f"{parent}/models/{model}", timeout=CALL_TIMEOUT_S)
        return str(found.name.split("@")[0])
    except (exceptions.NotFound, exceptions.InvalidArgument):
        pass
    named = _models(client, parent, model)
    if not named:
        raise InputError.of(
            "MODEL", f"{model!r} names no Model in {parent}; accepted: a resource name, an ID, "
            "or a display name",
        )  # fmt: skip
    return str(named[0].name.split("@")[0])


def versions(model_name: str, location: str) -> list[Any]:
    """The Model's versions, oldest first (ListModelVersions)."""
    client = clients.model_client(location)
    listed = client.list_model_versions(name=model_name, timeout=CALL_TIMEOUT_S)
    return sorted(listed, key=lambda v: int(v.version_id))


def move_alias(model_name: str, version: str, alias: str, location: str) -> Any:
    """Give ``alias`` to ``version`` of the Model (one MergeVersionAliases: the alias leaves
    the version that held it): the rollback of a promotion. Returns the version."""
    spec_gate.check("loss", "minimize", 0.0, alias, "keep")  # the alias rule alone
    if not version.isdigit():
        raise InputError.of("VERSION", f"{version!r}; accepted: a version id (1, 2, ...)")
    client = clients.model_client(location)
    return client.merge_version_aliases(
        name=f"{model_name}@{version}", version_aliases=[alias], timeout=CALL_TIMEOUT_S
    )
