"""What of a ``StudySpec`` the emulator does not apply, said in the sweep's job log.

Every documented ``StudySpec`` field (aiplatform v1 ``study.proto``) is applied, refused or
named here; none is silently ignored:

- applied: ``metrics[0]`` (the objective), ``parameters`` (conditional ones too),
  ``algorithm``, ``measurementSelectionType``, the ``automated_stopping_spec`` oneof
  (:mod:`trainpool.emulator.sweeps.trial_rules`);
- refused before anything is created (``trainpool.plan.validate_study``, for Vertex too):
  ``observationNoise`` and the value specs' ``defaultValue``, whose own comments say
  "Currently only supported by the Vertex AI Vizier service. Not supported by
  HyperparameterTuningJob or TrainingPipeline";
- accepted and passed on to Vertex, but not applied locally (:func:`notes`, one job log line
  each): ``studyStoppingConfig`` (described in Vizier's terms, "Before Vizier would generate
  a new suggestion"; whether HyperparameterTuningJob honours it is not documented),
  ``metrics[].safetyConfig`` (safe search), metrics after the first, the convex rule's
  ``learningRateParameterName`` and ``updateAllStoppedTrials``.
"""

from __future__ import annotations

from typing import Any


def notes(study: dict[str, Any]) -> list[str]:
    """One line per field of ``study`` (REST JSON) the emulator accepts but does not apply."""
    lines = []
    if study.get("studyStoppingConfig") is not None:
        lines.append(
            "studySpec.studyStoppingConfig is not applied by the emulator (Vertex describes "
            "it for Vizier studies; whether a HyperparameterTuningJob honours it is not "
            "documented): the sweep runs until maxTrialCount trials have run"
        )
    metrics = study.get("metrics", [])
    for i, metric in enumerate(metrics):
        if isinstance(metric, dict) and metric.get("safetyConfig") is not None:
            lines.append(
                f"studySpec.metrics[{i}].safetyConfig (safe search) is not applied by the "
                "emulator: no trial is judged safe or unsafe"
            )
    if len(metrics) > 1:
        others = ", ".join(str(m.get("metricId")) for m in metrics[1:] if isinstance(m, dict))
        lines.append(
            f"only the first metric ({metrics[0].get('metricId')}) drives the search, early "
            f"stopping and the best trial in the emulator; {others} are recorded in each "
            "trial's measurements (Vizier's early stopping supports single-objective studies "
            "only: aiplatform SDK vizier/pyvizier/automated_stopping.py)"
        )
    convex = study.get("convexAutomatedStoppingSpec")
    if isinstance(convex, dict):
        for key in ("learningRateParameterName", "updateAllStoppedTrials"):
            if convex.get(key) not in (None, "", False):
                lines.append(
                    f"studySpec.convexAutomatedStoppingSpec.{key} is not applied by the "
                    "emulator's convex rule (Vertex's autoregression model is not published)"
                )
    return lines
