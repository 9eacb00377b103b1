"""PipelineJobs record their lineage as Vertex Pipelines does, so runs can be compared.

The SDK, unchanged, over gRPC and REST: two runs of one pipeline submitted to an experiment
(``PipelineJob.submit(experiment=...)``), then compared with ``aiplatform.get_pipeline_df``
and ``get_experiment_df``. What is asserted is what Vertex answers, as the SDK's system
test against Vertex asserts it (googleapis/python-aiplatform
``tests/system/aiplatform/test_experiments.py``, ``test_add_pipeline_job_to_experiment``
and ``test_get_experiments_df`` at commit 3219d51921dbc9b65734a793dbab9619d0a7547d): a row
per run named after the job's id, ``run_type`` ``system.PipelineRun``, state COMPLETE, the
pipeline's parameters as ``param.*``, the metrics its tasks logged as ``metric.*``; and
``get_associated_experiment()`` names the experiment. ``get_pipeline_df`` reads the
``system.Run`` executions of the pipeline's context (``metadata/metadata.py``): their
``input:`` parameters as ``param.input:*`` and their output artifacts' metadata.
"""

# no `from __future__ import annotations`: kfp reads the components' annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud import aiplatform, storage
from google.cloud.aiplatform_v1.services.metadata_service import MetadataServiceClient
from kfp import compiler, dsl
from kfp.dsl import ClassificationMetrics, Metrics, Output
from typer.testing import CliRunner

from trainpool.cli import app
from trainpool.testing import emulated_vertex

pytestmark = pytest.mark.timeout(180)
PROJECT = "demo"
LOCATION = "us-central1"


@dsl.component(base_image="python:3.11")
def trainer(learning_rate: float, dropout_rate: float, metrics: Output[Metrics]):
    metrics.log_metric("accuracy", 1.0 - learning_rate)
    metrics.log_metric("mse", dropout_rate * 2)


@dsl.pipeline(name="compare-runs")
def pipeline(learning_rate: float, dropout_rate: float) -> Metrics:
    return trainer(learning_rate=learning_rate, dropout_rate=dropout_rate).outputs["metrics"]


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with emulated_vertex(tmp_path_factory.mktemp("lineage") / "root", PROJECT) as running:
        storage.Client().create_bucket("lineage-bucket")
        yield running


@pytest.mark.parametrize("transport", ["grpc", "rest"])
def test_two_pipeline_runs_are_compared_as_on_vertex(
    emu: Any, tmp_path: Path, transport: str
) -> None:
    template = tmp_path / "pipeline.yaml"
    compiler.Compiler().compile(pipeline, str(template))
    experiment = f"exp-pipes-{transport}"
    aiplatform.init(
        project=PROJECT,
        location=LOCATION,
        experiment=experiment,
        staging_bucket="gs://lineage-bucket",
        api_transport=transport,
    )
    jobs = []
    for index, lr in enumerate([0.1, 0.25]):
        job = aiplatform.PipelineJob(
            display_name=f"run-{index}",
            template_path=str(template),
            job_id=f"{transport}-run-{index}",
            pipeline_root="gs://lineage-bucket/root",
            parameter_values={"learning_rate": lr, "dropout_rate": 0.3},
            enable_caching=False,  # each transport's runs execute (Vertex caches by default)
        )
        job.submit(experiment=experiment)
        job.wait()
        assert job.get_associated_experiment().name == experiment
        jobs.append(job)

    rows = aiplatform.get_experiment_df().to_dict("records")
    assert sorted(rows, key=lambda r: r["run_name"]) == [
        {
            "experiment_name": experiment,
            "run_name": f"{transport}-run-{index}",
            "run_type": "system.PipelineRun",
            "state": "COMPLETE",
            "param.learning_rate": lr,
            "param.dropout_rate": 0.3,
            "metric.accuracy": 1.0 - lr,
            "metric.mse": 0.6,
        }
        for index, lr in enumerate([0.1, 0.25])
    ]
    compared = aiplatform.get_pipeline_df(pipeline="compare-runs").to_dict("records")
    mine = sorted(
        (r for r in compared if r["run_name"].startswith(transport)), key=lambda r: r["run_name"]
    )
    assert mine == [
        {
            "pipeline_name": "compare-runs",
            "run_name": f"{transport}-run-{index}",
            "param.input:learning_rate": lr,
            "param.input:dropout_rate": 0.3,
            "metric.accuracy": 1.0 - lr,
            "metric.mse": 0.6,
        }
        for index, lr in enumerate([0.1, 0.25])
    ]
    # the lineage itself: the trainer's execution wrote the metrics artifact
    detail = jobs[0].gca_resource.job_detail
    task = next(t for t in detail.task_details if t.task_name == "trainer")
    assert task.execution.name and task.execution.state.name == "COMPLETE"
    graph = MetadataServiceClient().query_execution_inputs_and_outputs(
        execution=task.execution.name
    )
    assert [(a.schema_title, dict(a.metadata)) for a in graph.artifacts] == [
        ("system.Metrics", {"accuracy": 0.9, "mse": 0.6})
    ]
    assert graph.artifacts[0].uri.startswith("gs://lineage-bucket/root/")
    assert [e.type_.name for e in graph.events] == ["OUTPUT"]


# The shape of Google's metrics-visualisation notebook (vertex-ai-samples
# notebooks/official/pipelines/metrics_viz_run_compare_kfp.ipynb): three tasks log Metrics and
# ClassificationMetrics to outputs the pipeline does not declare, two runs with other
# parameters, then ``get_pipeline_df`` read by ``param.input:seed``, ``param.input:splits``,
# ``metric.accuracy`` and ``metric.confidenceMetrics``. The SDK builds that frame from the
# ``system.Run`` Execution's output artifacts (``metadata/metadata.py``,
# ``_LegacyExperimentService._query_runs_to_data_frame``), so the tasks' metrics artifacts
# must be outputs of the run's Execution, as on Vertex.
@dsl.component(base_image="python:3.11")
def wine_classification(wmetrics: Output[ClassificationMetrics]):
    wmetrics.log_roc_curve([0.0, 0.5, 1.0], [0.0, 0.75, 1.0], [1.5, 0.5, 0.0])


@dsl.component(base_image="python:3.11")
def iris_logregression(input_seed: int, split_count: int, metrics: Output[Metrics]):
    metrics.log_metric("accuracy", 90.0 + input_seed / split_count)


@dsl.component(base_image="python:3.11")
def iris_sgdclassifier(test_samples_fraction: float, metricsc: Output[ClassificationMetrics]):
    metricsc.log_confusion_matrix(
        ["Setosa", "Versicolour", "Virginica"], [[10, 0, 0], [0, 8, 2], [0, 1, 9]]
    )


@dsl.pipeline(name="metrics-pipeline-v2")
def metrics_pipeline(seed: int, splits: int):
    wine_classification()
    iris_logregression(input_seed=seed, split_count=splits)
    iris_sgdclassifier(test_samples_fraction=0.3)


ROC = [
    {"confidenceThreshold": 1.5, "recall": 0.0, "falsePositiveRate": 0.0},
    {"confidenceThreshold": 0.5, "recall": 0.75, "falsePositiveRate": 0.5},
    {"confidenceThreshold": 0.0, "recall": 1.0, "falsePositiveRate": 1.0},
]
CONFUSION = {
    "annotationSpecs": [
        {"displayName": "Setosa"},
        {"displayName": "Versicolour"},
        {"displayName": "Virginica"},
    ],
    "rows": [{"row": [10, 0, 0]}, {"row": [0, 8, 2]}, {"row": [0, 1, 9]}],
}


def test_notebook_runs_compared_by_their_task_metrics(emu: Any, tmp_path: Path) -> None:
    template = tmp_path / "pipeline.yaml"
    compiler.Compiler().compile(metrics_pipeline, str(template))
    experiment = "exp-metrics-viz"
    aiplatform.init(project=PROJECT, location=LOCATION, staging_bucket="gs://lineage-bucket")
    runs = {"viz-run-1": (7, 10), "viz-run-2": (5, 7)}
    for job_id, (seed, splits) in runs.items():
        job = aiplatform.PipelineJob(
            display_name="iris",
            template_path=str(template),
            job_id=job_id,
            pipeline_root="gs://lineage-bucket/viz",
            parameter_values={"seed": seed, "splits": splits},
        )  # caching left on, as in the notebook: the second run's unchanged tasks are cached
        if job_id == "viz-run-1":
            job.run()  # as the notebook runs it
        else:  # the same run added to an experiment (run() takes no experiment)
            job.submit(experiment=experiment)
            job.wait()

    states = {t.task_name: t.state.name for t in job.gca_resource.job_detail.task_details}
    assert states["wine-classification"] == states["iris-sgdclassifier"] == "SKIPPED"  # cached
    assert states["iris-logregression"] == "SUCCEEDED"

    frame = aiplatform.get_pipeline_df(pipeline="metrics-pipeline-v2")
    assert {"param.input:seed", "param.input:splits", "metric.accuracy"} <= set(frame.columns)
    rows = sorted(frame.to_dict("records"), key=lambda r: r["run_name"])
    assert rows == [
        {
            "pipeline_name": "metrics-pipeline-v2",
            "run_name": job_id,
            "param.input:seed": seed,
            "param.input:splits": splits,
            "metric.accuracy": 90.0 + seed / splits,
            "metric.confidenceMetrics": ROC,  # wine_classification's ROC
            "metric.confusionMatrix": CONFUSION,  # iris_sgdclassifier's
        }
        for job_id, (seed, splits) in runs.items()
    ]
    # the notebook's AUC cell: the ROC points as a frame
    import pandas as pd

    roc = pd.DataFrame(frame["metric.confidenceMetrics"][0])
    assert list(roc["recall"]) == [0.0, 0.75, 1.0]

    # trainpool's own listing: the same columns, the structures summarised (--json: whole)
    listed = CliRunner().invoke(app, ["compare", "metrics-pipeline-v2", "--project", PROJECT])
    assert listed.exit_code == 0, listed.output
    assert [line.split() for line in listed.output.splitlines()] == [
        [
            "RUN",
            "STATE",
            "param.input:seed",
            "param.input:splits",
            "metric.accuracy",
            "metric.confidenceMetrics",
            "metric.confusionMatrix",
        ],
        ["viz-run-1", "COMPLETE", "7", "10", "90.7", "3", "points", "3x3", "matrix"],
        ["viz-run-2", "COMPLETE", "5", "7", f"{90.0 + 5 / 7:g}", "3", "points", "3x3", "matrix"],
    ]
    whole = CliRunner().invoke(
        app, ["compare", "metrics-pipeline-v2", "--json", "--project", PROJECT]
    )
    first = json.loads(whole.output.splitlines()[0])
    assert first["metric.confidenceMetrics"] == ROC and first["metric.confusionMatrix"] == CONFUSION
    assert first["state"] == "COMPLETE" and first["param.input:seed"] == 7
    missing = CliRunner().invoke(app, ["compare", "no-such-pipeline", "--project", PROJECT])
    assert missing.exit_code == 1 and "no pipeline 'no-such-pipeline'" in missing.output

    # get_experiment_df reads the run Context's system.Metrics (and google.*Metrics)
    # artifacts only (pipeline_jobs.py, PipelineJob._query_experiment_row): the scalars, not
    # kfp's system.ClassificationMetrics, on Vertex as here
    assert aiplatform.get_experiment_df(experiment).to_dict("records") == [
        {
            "experiment_name": experiment,
            "run_name": "viz-run-2",
            "run_type": "system.PipelineRun",
            "state": "COMPLETE",
            "param.seed": 5,
            "param.splits": 7,
            "metric.accuracy": 90.0 + 5 / 7,
        }
    ]
