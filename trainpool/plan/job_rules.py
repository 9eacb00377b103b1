"""Rules of the job-level fields: durations, scheduling strategy, output directory, keys, and
text that cannot reach a process (NUL characters, anywhere in the spec)."""

from __future__ import annotations

from typing import Any

from trainpool.plan.findings import Findings, show
from trainpool.plan.naming import Namer
from trainpool.plan.text_rules import NUL_RULE, gcs_uri_problem, nul_paths
from trainpool.spec.schema import CUSTOM_JOB_SPEC, unknown_keys
from trainpool.spec.timing import DURATION_ACCEPTED, duration_seconds

STRATEGIES = ("STANDARD", "SPOT", "FLEX_START")
SHOWN_NUL = 5


def _duration(value: object) -> float | None:
    try:
        return duration_seconds(value) if isinstance(value, str) else None
    except ValueError:
        return None


def check_job(spec: dict[str, Any], names: Namer, found: Findings) -> None:
    """Every job-level rule of a normalized REST spec.

    ``scheduling.timeout`` is more than 0 ("The maximum job running time"); ``maxWaitDuration``
    is 0 or more ("If set to 0, the job will wait indefinitely", ``custom_job.proto``
    ``Scheduling``); both are protobuf Durations (:func:`trainpool.spec.timing.duration_seconds`).
    """
    scheduling = spec.get("scheduling") or {}
    for key, least in (("timeout", "more than 0s"), ("maxWaitDuration", "0s or more")):
        value = scheduling.get(key)
        if value is None:
            continue
        seconds = _duration(value)
        if seconds is None or seconds < 0 or (seconds == 0 and key == "timeout"):
            found.error(
                names.job(f"scheduling.{key}"),
                f"{show(value)} is not accepted; accepted: {DURATION_ACCEPTED}, {least}",
            )
    strategy = scheduling.get("strategy")
    if strategy is not None and strategy not in STRATEGIES:
        found.error(
            names.job("scheduling.strategy"),
            f"{show(strategy)} is not accepted; accepted: {', '.join(STRATEGIES)}",
        )
    if scheduling.get("maxWaitDuration") is not None and strategy != "FLEX_START":
        found.error(
            names.job("scheduling.maxWaitDuration"),
            f"{show(scheduling['maxWaitDuration'])} with strategy {show(strategy)}; "
            "accepted: only with strategy FLEX_START",
        )
    prefix = (spec.get("baseOutputDirectory") or {}).get("outputUriPrefix")
    if prefix is not None:
        field = names.job("baseOutputDirectory.outputUriPrefix")
        problem = gcs_uri_problem(prefix, field)
        if problem is not None:
            found.error(field, problem.removeprefix(f"{field}: "))
    check_nul(spec, names, found)


def check_nul(spec: dict[str, Any], names: Namer, found: Findings) -> None:
    """No string anywhere in the spec holds a NUL character (:mod:`trainpool.plan.text_rules`)."""
    paths = list(nul_paths(spec))
    for path in paths[:SHOWN_NUL]:
        found.error(names.job(path), f"holds a NUL character; accepted: {NUL_RULE}")
    if len(paths) > SHOWN_NUL:
        found.error(names.job("workerPoolSpecs"), f"and {len(paths) - SHOWN_NUL} more NULs")


def check_keys(spec: dict[str, Any], found: Findings) -> None:
    """Unknown field names anywhere in a REST spec (typos)."""
    for field, accepted in unknown_keys(spec, CUSTOM_JOB_SPEC):
        found.error(field, f"unknown key; accepted: {', '.join(accepted)}")
