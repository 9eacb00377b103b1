"""A run's task details: an output artifact's URI is the one the task wrote in its executor
output (a launcher names the model's folder), as Vertex records it."""

from __future__ import annotations

import json
from pathlib import Path

from trainpool.kfp_local.details import TaskDetails
from trainpool.kfp_local.tasklog import TaskState


def test_an_artifact_uri_the_task_wrote_replaces_the_one_it_was_given(tmp_path: Path) -> None:
    gcs = tmp_path / "gcs"
    given = gcs / "bucket" / "root" / "select-model" / "model"
    output_file = tmp_path / "executor_output.json"
    written = {"name": "model", "uri": "gs://bucket/runs/7/model/", "metadata": {"f": 1}}
    output_file.write_text(json.dumps({"artifacts": {"model": {"artifacts": [written]}}}))
    details = TaskDetails(gcs)
    details.record(
        2,
        {
            "outputs": {
                "outputFile": str(output_file),
                "artifacts": {
                    "model": {
                        "artifacts": [{"uri": str(given), "type": {"schemaTitle": "google.Model"}}]
                    },
                    "report": {"artifacts": [{"uri": str(gcs / "bucket" / "report")}]},
                },
            }
        },
    )
    task = TaskState("select-model", state="SUCCEEDED", started=1.0, ended=2.0, task_id=2)
    [detail] = details.rest([task])
    model = detail["outputs"]["model"]["artifacts"][0]
    assert (model["uri"], model["metadata"]) == ("gs://bucket/runs/7/model/", {"f": 1})
    assert detail["outputs"]["report"]["artifacts"][0]["uri"] == "gs://bucket/report"
