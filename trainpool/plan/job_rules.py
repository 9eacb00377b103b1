"""Rules of the job-level fields: durations, scheduling strategy, output directory, keys."""

from __future__ import annotations

from typing import Any

from trainpool.plan.findings import Findings, show
from trainpool.plan.naming import Namer
from trainpool.spec.schema import CUSTOM_JOB_SPEC, unknown_keys
from trainpool.spec.timing import duration_seconds

STRATEGIES = ("STANDARD", "SPOT", "FLEX_START")


def _positive_duration(value: object) -> bool:
    try:
        return isinstance(value, str) and duration_seconds(value) > 0
    except ValueError:
        return False


def check_job(spec: dict[str, Any], names: Namer, found: Findings) -> None:
    """Every job-level rule of a normalized REST spec."""
    scheduling = spec.get("scheduling") or {}
    for key in ("timeout", "maxWaitDuration"):
        value = scheduling.get(key)
        if value is not None and not _positive_duration(value):
            found.error(
                names.job(f"scheduling.{key}"),
                f"{show(value)} is not accepted; accepted: a duration in seconds such "
                'as "3600s" or "1.5s"',
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
    if prefix is not None and (not isinstance(prefix, str) or not prefix.startswith("gs://")):
        found.error(
            names.job("baseOutputDirectory.outputUriPrefix"),
            f"{show(prefix)} is not accepted; accepted: a gs://BUCKET/PATH URI",
        )


def check_keys(spec: dict[str, Any], found: Findings) -> None:
    """Unknown field names anywhere in a REST spec (typos)."""
    for field, accepted in unknown_keys(spec, CUSTOM_JOB_SPEC):
        found.error(field, f"unknown key; accepted: {', '.join(accepted)}")
