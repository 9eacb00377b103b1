"""trainpool.vertex.models: the retraining gate against the emulator's Model Registry.

One Model per display name, a version per run, the alias only on a better one; two runs
promoting at once leave it on the better, the other kept, nothing half-moved.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import trainpool.emulator as emulator
from trainpool.errors import InputError
from trainpool.testing import emulated_vertex
from trainpool.vertex import clients, models

pytestmark = pytest.mark.timeout(120)

PROJECT, LOCATION = "demo", "us-central1"
IMAGE = "us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-0:latest"
GATE = models.Gate("loss", "minimize", 0.0, "blessed", "keep")


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    with emulated_vertex(tmp_path_factory.mktemp("gate") / "root", PROJECT) as running:
        yield running


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "SETTLE_S", 0.3)


def gate(name: str, loss: float, settings: models.Gate = GATE) -> dict[str, Any]:
    return models.promote_if_better(
        PROJECT, LOCATION, name, f"gs://bkt/{name}/{loss}/", IMAGE, loss, settings, log=print
    )


def aliases(model: str) -> dict[str, list[str]]:
    """version id -> its aliases (ListModelVersions)."""
    listed = clients.model_client(LOCATION).list_model_versions(name=model.split("@")[0])
    return {v.version_id: sorted(v.version_aliases) for v in listed}


def test_first_promotes_better_promotes_worse_and_equal_are_kept_or_skipped(
    emu: emulator.Emulator,
) -> None:
    first = gate("m-week", 0.5)
    assert (first["decision"], first["winner"]) == ("promoted", "challenger")
    assert first["blessed"] is None
    model = first["model"].split("@")[0]
    better = gate("m-week", 0.4)
    assert better["decision"] == "promoted" and better["blessedVersion"] == f"{model}@1"
    assert better["improvement"] == pytest.approx(0.1)
    worse = gate("m-week", 0.45)
    assert (worse["decision"], worse["winner"], worse["model"]) == ("kept", "blessed", f"{model}@3")
    assert worse["blessedVersion"] == f"{model}@2" and worse["improvement"] == pytest.approx(-0.05)
    equal = gate("m-week", 0.4)
    assert (equal["decision"], equal["winner"]) == ("kept", "tie")
    skip = models.Gate("loss", "minimize", 0.0, "blessed", "skip")
    assert gate("m-week", 0.9, skip)["decision"] == "not-uploaded"
    least = models.Gate("loss", "minimize", 0.2, "blessed", "keep")
    assert gate("m-week", 0.3, least)["decision"] == "kept", "0.1 better, 0.2 needed"
    assert aliases(model) == {
        "1": ["default"],
        "2": ["blessed"],
        "3": [],
        "4": [],
        "5": [],
    }, "one Model, a version per uploaded run, the alias on the better"
    blessed = clients.model_client(LOCATION).get_model(name=f"{model}@blessed")
    assert blessed.labels["trainpool-gate-metric"] == "loss"
    assert blessed.labels["trainpool-gate-value"] == "0_4"
    assert blessed.version_description.startswith("loss 0.4 (minimize)")


def test_a_blessed_version_without_the_metric_fails_the_gate_naming_it(
    emu: emulator.Emulator,
) -> None:
    gate("m-other-metric", 0.5)
    accuracy = models.Gate("accuracy", "maximize", 0.0, "blessed", "keep")
    with pytest.raises(InputError, match=r"@1 records metric 'loss'.*not 'accuracy'"):
        gate("m-other-metric", 0.9, accuracy)


@pytest.mark.parametrize("alias", ["default", "1", "Blessed", "-blessed", "bl@ssed", "b\x00b"])
def test_hostile_aliases_are_refused_before_anything_is_registered(
    emu: emulator.Emulator, alias: str
) -> None:
    with pytest.raises(InputError, match=r"alias: .*\[a-z\]\[a-zA-Z0-9-\]\{0,126\}\[a-z0-9\]"):
        models.Gate("loss", "minimize", 0.0, alias, "keep")
    listed = clients.model_client(LOCATION).list_models(
        request={"parent": f"projects/{PROJECT}/locations/{LOCATION}"}
    )
    assert all("hostile" not in m.display_name for m in listed)


def race(name: str, losses: list[float], monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Gate ``losses`` at once, forcing the race: every run has uploaded its version and read
    the blessed version (the same one, or none) before any of them moves the alias."""
    ready = threading.Barrier(len(losses), timeout=30)
    real_read, real_upload = models._blessed, models._upload_version
    uploaded: set[int] = set()
    waited: set[int] = set()

    def upload(*args: Any) -> Any:
        version = real_upload(*args)
        uploaded.add(threading.get_ident())
        return version

    def read_together(client: Any, model: str, alias: str) -> Any:
        found = real_read(client, model, alias)
        me = threading.get_ident()
        if me in uploaded and me not in waited:
            waited.add(me)
            ready.wait()
        return found

    monkeypatch.setattr(models, "_blessed", read_together)
    monkeypatch.setattr(models, "_upload_version", upload)
    results: list[dict] = [{} for _ in losses]

    def run(index: int) -> None:
        results[index] = gate(name, losses[index])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(losses))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert waited == uploaded and len(waited) == len(losses), "the runs raced"
    return results


def gate_models(name: str) -> list[Any]:
    return list(
        clients.model_client(LOCATION).list_models(
            request={
                "parent": f"projects/{PROJECT}/locations/{LOCATION}",
                "filter": f'display_name="{name}"',
            }
        )
    )


def test_two_runs_promoting_at_once_the_better_wins_the_other_is_kept(
    emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = gate("m-race", 0.5)["model"].split("@")[0]
    a, b = race("m-race", [0.4, 0.3], monkeypatch)
    winner, loser = (a, b) if a["challenger"] == 0.3 else (b, a)
    assert winner["decision"] == "promoted", (a, b)  # the better run wins, whichever moved last
    if loser["decision"] == "kept":  # it saw the better one holding the alias
        assert loser["blessedVersion"] == winner["model"] and loser["blessed"] == 0.3
    else:  # on a loaded machine it may have promoted first, over version 1, then lost it:
        # Vertex has no compare-and-set on aliases (promote_if_better's docstring)
        assert loser["decision"] == "promoted" and loser["blessed"] == 0.5, (a, b)
    held = {v: names for v, names in aliases(model).items() if "blessed" in names}
    assert list(held) == [winner["model"].rsplit("@", 1)[1]], "on exactly one version"
    assert sorted(aliases(model)) == ["1", "2", "3"], "the loser is kept as a version"
    assert [v for v, names in aliases(model).items() if "default" in names] == ["1"]


def test_two_equal_runs_at_once_one_is_promoted_the_other_kept(
    emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = gate("m-tie", 0.5)["model"].split("@")[0]
    results = race("m-tie", [0.2, 0.2], monkeypatch)
    assert sorted(r["decision"] for r in results) == ["kept", "promoted"], results
    promoted = next(r for r in results if r["decision"] == "promoted")
    blessed = [v for v, names in aliases(model).items() if "blessed" in names]
    assert [f"{model}@{v}" for v in blessed] == [promoted["model"]]


def test_two_first_runs_at_once_make_one_model(
    emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = race("m-new", [0.6, 0.7], monkeypatch)
    [model] = gate_models("m-new")
    assert sorted(r["decision"] for r in results) == ["kept", "promoted"], results
    assert {r["model"].split("@")[0] for r in results} == {model.name}
    promoted = next(r for r in results if r["decision"] == "promoted")
    assert promoted["challenger"] == 0.6
    blessed = [v for v, names in aliases(model.name).items() if "blessed" in names]
    assert [f"{model.name}@{v}" for v in blessed] == [promoted["model"]]


def test_the_runs_metric_comes_from_the_sweep_or_the_jobs_metrics_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = {
        "metricId": "loss",
        "bestMetricValue": 0.3,
        "bestTrialId": "2",
        "trials": [{"id": "2", "metrics": {"loss": 0.3, "accuracy": 0.9}}],
        "modelUri": "gs://bkt/run/2/model/",
    }
    assert models.challenger_metric(sweep, "loss") == 0.3
    assert models.challenger_metric(sweep, "accuracy") == 0.9
    monkeypatch.setenv("TRAINPOOL_GCS_ROOT", str(tmp_path))
    (tmp_path / "bkt" / "run" / "model").mkdir(parents=True)
    (tmp_path / "bkt/run/model/metrics.json").write_text(json.dumps({"loss": 0.25}))
    job = {"job": "j", "state": "JOB_STATE_SUCCEEDED", "modelUri": "gs://bkt/run/model/"}
    assert models.challenger_metric(job, "loss") == 0.25
    with pytest.raises(InputError, match=r"no 'auc'.*metrics.json"):
        models.challenger_metric(job, "auc")


def test_a_retried_gate_finds_its_runs_version_instead_of_registering_another(
    emu: emulator.Emulator,
) -> None:
    def night(loss: float, run: str) -> dict[str, Any]:
        return models.promote_if_better(
            PROJECT, LOCATION, "m-retry", f"gs://bkt/{run}/", IMAGE, loss, GATE, run=run
        )

    first = night(0.5, "nightly-20400101030000")
    retried = night(0.5, "nightly-20400101030000")
    assert (retried["decision"], retried["model"]) == ("promoted", first["model"])
    assert retried["summary"].endswith("it holds it already")
    model = first["model"].split("@")[0]
    kept = night(0.6, "nightly-20400102030000")
    again = night(0.6, "nightly-20400102030000")
    assert (again["decision"], again["model"]) == ("kept", kept["model"])
    assert aliases(model) == {"1": ["blessed", "default"], "2": []}, "no version twice"
    version = clients.model_client(LOCATION).get_model(name=kept["model"])
    assert version.labels["trainpool-gate-run"] == "nightly-20400102030000"
