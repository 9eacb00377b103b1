"""A store written by an earlier emulator (one table per service) keeps its history."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import model as model_types
from google.cloud.aiplatform_v1.types.job_state import JobState

import trainpool.emulator as emulator
from trainpool.vertex.clients import job_client, model_client

PARENT = "projects/p/locations/us-central1"


def old_store(root: Path) -> None:
    """The tables of the emulator before the one ``resources`` table, with two jobs, a model."""
    root.mkdir(parents=True)
    db = sqlite3.connect(root / "emulator.sqlite")
    db.executescript(
        """
        CREATE TABLE jobs (name TEXT PRIMARY KEY, kind TEXT NOT NULL, parent TEXT NOT NULL,
          seq INTEGER NOT NULL, state INTEGER NOT NULL, proto BLOB NOT NULL,
          display_name TEXT NOT NULL DEFAULT '');
        CREATE TABLE jobs_labels (name TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
          PRIMARY KEY (name, key));
        CREATE TABLE models (name TEXT PRIMARY KEY, parent TEXT NOT NULL, seq INTEGER NOT NULL,
          proto BLOB NOT NULL);
        """
    )
    for seq, run in ((1000, "r1"), (1001, "r2")):
        job = cj.CustomJob(
            name=f"{PARENT}/customJobs/{seq}",
            display_name=f"old-{seq}",
            state=JobState.JOB_STATE_SUCCEEDED,
            labels={"trainpool-local-run": run},
        )
        db.execute(
            "INSERT INTO jobs VALUES (?, 'customJobs', ?, ?, ?, ?, ?)",
            (job.name, PARENT, seq, int(job.state), cj.CustomJob.serialize(job), job.display_name),
        )
        db.execute("INSERT INTO jobs_labels VALUES (?, 'trainpool-local-run', ?)", (job.name, run))
    model = model_types.Model(name=f"{PARENT}/models/7", display_name="m", version_id="1")
    db.execute(
        "INSERT INTO models VALUES (?, ?, 1, ?)",
        (model.name, PARENT, model_types.Model.serialize(model)),
    )
    db.commit()
    db.close()


def test_an_old_store_is_listed_and_filtered_after_the_upgrade(
    tmp_path: Path, monkeypatch: object
) -> None:
    root = tmp_path / "root"
    old_store(root)
    with emulator.start(root) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)  # type: ignore[attr-defined]
        client = job_client("us-central1")
        assert [j.display_name for j in client.list_custom_jobs(parent=PARENT)] == [
            "old-1000",
            "old-1001",
        ]
        filtered = client.list_custom_jobs(
            request={"parent": PARENT, "filter": 'labels.trainpool-local-run="r2"'}
        )
        assert [j.name for j in filtered] == [f"{PARENT}/customJobs/1001"]
        assert model_client("us-central1").get_model(name=f"{PARENT}/models/7").display_name == "m"
        tables = {r["name"] for r in emu.state.db.execute("SELECT name FROM sqlite_master")}
        assert "jobs" not in tables and "models" not in tables
    with emulator.start(root):  # a second start finds nothing more to move
        pass
