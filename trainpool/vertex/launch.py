"""What ``launch_custom_job`` does: build the CustomJob, then run it to the end.

The spec comes from ``plan_cluster`` (REST JSON, pools in positional roles,
``{}`` kept). Nothing here reorders or drops pools: the job reaches Vertex with
the same layout the planner wrote.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainpool.cluster_env import gcs
from trainpool.cluster_env.env import output_dirs
from trainpool.images import storage
from trainpool.spec import coerce_ints
from trainpool.vertex import jobs, labels, summary

FLEX_START = "FLEX_START"
STRATEGIES = ("STANDARD", "ON_DEMAND", "LOW_COST", "SPOT", "FLEX_START")


class JobFailed(RuntimeError):
    """The job ended in a state other than SUCCEEDED; the message carries its error."""


@dataclass(frozen=True)
class Options:
    """Overrides of the spec's job-level fields ("" keeps what the spec says)."""

    image_uri: str = ""
    base_output_directory: str = ""
    timeout: str = ""
    service_account: str = ""
    strategy: str = ""
    max_wait_duration: str = ""
    pipeline_root: str = ""  # the run's pipeline root: the output base when none is given
    run_id: str = ""  # the pipeline run's id: each run writes under <base>/<run id>/


def pipeline_root_uri(pipeline_root: str) -> str:
    """The pipeline root as a ``gs://`` URI ("" when it is a local path outside the store).

    On Vertex the root is ``gs://...``; kfp.local gives the local store's path of it.
    """
    if not pipeline_root or pipeline_root.startswith("gs://"):
        return pipeline_root
    root = storage.local_root()
    return (gcs.from_path(pipeline_root, root) or "") if root is not None else ""


def run_output_directory(spec: dict[str, Any], options: Options) -> str:
    """Where this run writes: ``<base>/<run id>``, the base being the one given, else the
    spec's, else the pipeline root, so two runs (two nights of a schedule) never share a
    ``model/`` folder; "" when there is no base at all."""
    base = (
        options.base_output_directory
        or (spec.get("baseOutputDirectory") or {}).get("outputUriPrefix", "")
        or pipeline_root_uri(options.pipeline_root)
    )
    if not base:
        return ""
    return f"{base.rstrip('/')}/{options.run_id}" if options.run_id else base


def fill_images(spec: dict[str, Any], image_uri: str) -> dict[str, Any]:
    """Give ``image_uri`` to every non-empty pool that has neither an image nor a package."""
    if not image_uri:
        return spec
    for pool in spec.get("workerPoolSpecs", []):
        container = pool.get("containerSpec") or {}
        if pool and not container.get("imageUri") and not pool.get("pythonPackageSpec"):
            pool["containerSpec"] = {**container, "imageUri": image_uri}
    return spec


def apply_options(
    spec: dict[str, Any], options: Options, log: Callable[[str], None]
) -> dict[str, Any]:
    """The spec with the overrides applied; ``maxWaitDuration`` kept only with FLEX_START."""
    spec = fill_images(spec, options.image_uri)
    scheduling = dict(spec.get("scheduling") or {})
    if options.strategy:
        if options.strategy not in STRATEGIES:
            raise ValueError(f"strategy: {options.strategy!r}; accepted: {', '.join(STRATEGIES)}")
        scheduling["strategy"] = options.strategy
    if options.timeout:
        scheduling["timeout"] = options.timeout
    if options.max_wait_duration:
        scheduling["maxWaitDuration"] = options.max_wait_duration
    if "maxWaitDuration" in scheduling and scheduling.get("strategy") != FLEX_START:
        log(
            f"maxWaitDuration {scheduling.pop('maxWaitDuration')} dropped: "
            f"it applies only with strategy {FLEX_START}"
        )
    if scheduling:
        spec["scheduling"] = scheduling
    output = run_output_directory(spec, options)
    if output:
        spec["baseOutputDirectory"] = {"outputUriPrefix": output}
    if options.service_account:
        spec["serviceAccount"] = options.service_account
    return spec


def require(**fields: str) -> None:
    """Raise ValueError naming the first empty required field."""
    for name, value in fields.items():
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name}: {value!r}; accepted: a non-empty string")


def job_spec(
    custom_job_spec: dict[str, Any], options: Options, log: Callable[[str], None]
) -> dict[str, Any]:
    """The CustomJobSpec to send: coerced, overridden, and checked by the planner's rules."""
    from trainpool.plan import validate_custom_job_spec

    if not isinstance(custom_job_spec, dict):
        raise ValueError(
            f"custom_job_spec: {custom_job_spec!r}; accepted: a CustomJobSpec in REST JSON"
        )
    spec = apply_options(coerce_ints(copy.deepcopy(custom_job_spec)), options, log)
    for warning in validate_custom_job_spec(spec):
        log(f"warning: {warning}")
    return spec


JOB_FIELDS = ("labels", "encryptionSpec")
"""The plan's CustomJob fields outside its jobSpec (``plan_cluster``'s ``job_fields``)."""


def job_level(
    job_fields: dict[str, Any] | None, user_labels: dict[str, str], task_id: str
) -> dict[str, Any]:
    """The job's labels and encryption spec: the plan's, then ``user_labels`` (which win),
    the pipeline run's and the task's."""
    fields = dict(job_fields or {})
    unknown = sorted(set(fields) - set(JOB_FIELDS))
    if unknown:
        raise ValueError(
            f"job_fields: {unknown} not accepted; accepted: {', '.join(JOB_FIELDS)} "
            "(plan_cluster's job_fields output)"
        )
    merged = {**fields.pop("labels", {}), **user_labels}
    return {"labels": labels.job_labels(merged, task_id), **fields}


def custom_job(
    display_name: str,
    custom_job_spec: dict[str, Any],
    *,
    options: Options,
    user_labels: dict[str, str],
    task_id: str,
    job_fields: dict[str, Any] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The whole CustomJob (REST JSON) one task creates."""
    require(display_name=display_name)
    return {
        "displayName": display_name,
        "jobSpec": job_spec(custom_job_spec, options, log),
        **job_level(job_fields, user_labels, task_id),
    }


def model_uri(job_spec: dict[str, Any], trial_id: str | None = None) -> str:
    """Where the job (or its trial) writes its model: ``AIP_MODEL_DIR``; "" without a base."""
    return output_dirs(job_spec, trial_id).get("AIP_MODEL_DIR", "")


def model_metadata(serving_image: str) -> dict[str, Any]:
    """A ``google.UnmanagedContainerModel`` artifact's metadata: what serves the model, as
    GCPC's ModelUploadOp reads it (``containerSpec.imageUri``); empty without an image."""
    return {"containerSpec": {"imageUri": serving_image}} if serving_image else {}


@dataclass(frozen=True)
class Result:
    job_name: str
    state: str
    summary: str
    error: str
    model_uri: str = ""

    @property
    def outcome(self) -> dict[str, Any]:
        """What the pipeline hands on from a single job."""
        return {"job": self.job_name, "state": self.state, "modelUri": self.model_uri}

    def raise_for_state(self) -> None:
        """Fail the task unless the job succeeded."""
        if self.state != "JOB_STATE_SUCCEEDED":
            raise JobFailed(f"{self.job_name} ended {self.state}: {self.error or 'no error given'}")


def follow(
    kind: jobs.Kind,
    project: str,
    location: str,
    job: dict[str, Any],
    gcp_resources: str,
    task_id: str,
    launcher: jobs.JobLauncher | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Create (or re-attach to) a job of ``kind``, follow it to the end; the final job as a
    proto and as REST JSON."""
    require(project=project, location=location)
    launcher = launcher or jobs.JobLauncher(kind, project=project, location=location)
    task_value = labels.task_label_value(task_id) if task_id else ""
    final = launcher.run(jobs.from_rest(kind, job), gcp_resources, task_value)
    return final, jobs.to_rest_json(final)


def launch(
    project: str,
    location: str,
    job: dict[str, Any],
    gcp_resources: str,
    task_id: str,
    launcher: jobs.JobLauncher | None = None,
) -> Result:
    """Create (or re-attach to) ``job`` and follow it to a final state."""
    final, rest = follow(jobs.CUSTOM_JOB, project, location, job, gcp_resources, task_id, launcher)
    return Result(
        job_name=final.name,
        state=jobs.state_name(final),
        summary=summary.custom_job_markdown(rest, jobs.duration_s(final)),
        error=final.error.message,
        model_uri=model_uri(rest.get("jobSpec", {})),
    )
