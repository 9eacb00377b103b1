"""promote_model: the retraining gate; register tonight's model, bless it only when it is better."""

from typing import NamedTuple

from google_cloud_pipeline_components.types.artifact_types import UnmanagedContainerModel
from kfp import dsl
from kfp.dsl import Input

from trainpool.config import COMPONENTS_IMAGE


@dsl.component(base_image=COMPONENTS_IMAGE, install_kfp_package=False)
def promote_model(
    project: str,
    location: str,
    display_name: str,
    model: Input[UnmanagedContainerModel],
    outcome: dict,
    serving_image: str = "",
    metric: str = "loss",
    goal: str = "minimize",
    min_improvement: float = 0.0,
    alias: str = "blessed",
    on_worse: str = "keep",
    run_id: str = dsl.PIPELINE_JOB_ID_PLACEHOLDER,
) -> NamedTuple("Outputs", decision=str, model_name=str, verdict=dict):
    """Compare the run's metric with the blessed version's, and register the model as a new
    version of the Model named display_name only as the parameters say.

    The run's metric is outcome's (the best trial's, or the single job's metrics.json beside
    its model); the blessed version is the one alias names, its metric recorded in its
    labels when it was registered. goal is "minimize" or "maximize"; the model is better
    when it beats the blessed one by more than 0 and at least min_improvement. A better
    model becomes a new version and gets alias (Vertex's alias rule; not "default"); a worse
    or equal one is registered unpromoted (on_worse "keep") or not at all ("skip"); the
    first run of a new Model promotes. Outputs the decision ("promoted", "kept" or
    "not-uploaded"), the version registered ("" when none), and the verdict: both metrics,
    the improvement, the winner, the blessed version and a one-line summary.
    """
    from trainpool.vertex import models

    gate = models.Gate(metric, goal, float(min_improvement), alias, on_worse)
    image = serving_image or model.metadata.get("containerSpec", {}).get("imageUri", "")
    verdict = models.promote_if_better(
        project,
        location,
        display_name,
        model.uri,
        image,
        models.challenger_metric(outcome, metric),
        gate,
        run=run_id,
    )
    print(verdict["summary"])
    return (verdict["decision"], verdict["model"], verdict)
