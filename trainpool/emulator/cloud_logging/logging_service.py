"""``google.logging.v2.LoggingServiceV2``: the training jobs' logs, as Cloud Logging serves them.

What Vertex users read job logs with: ``gcloud ai custom-jobs stream-logs`` and ``gcloud
logging read`` (REST ``entries:list``), ``google.cloud.logging.Client().list_entries()``
(gRPC), ``tail_entries`` (gRPC's bidirectional TailLogEntries). The entries are the jobs'
(:mod:`trainpool.emulator.cloud_logging.entries`) and what clients wrote
(``WriteLogEntries``). Request rules are Cloud Logging's (google/logging/v2/logging.proto):
``page_size`` "Default is 50. If the value is negative or exceeds 1000, the request is
rejected"; ``order_by`` "timestamp asc" (the default) or "timestamp desc"; the filter is the
Logging query language (:mod:`trainpool.emulator.cloud_logging.query`). ListLogs names the
logs of a project. Cloud Logging's other methods (sinks, buckets, metrics, DeleteLog) are
not served. None of these is a standard method of
:mod:`trainpool.emulator.standard_methods`: entries are written and read by query, not created
and fetched by name, and ListLogs answers names, not resources (both with Cloud Logging's page
rules, not the records').

The REST rules of this API are given here as data, quoted from logging.proto (its Python
client has no REST transport to read them from).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

from google.cloud.logging_v2.types import log_entry
from google.cloud.logging_v2.types import logging as lg
from google.protobuf import json_format

from trainpool.emulator.api.rpc import Service, service
from trainpool.emulator.cloud_logging import query
from trainpool.emulator.cloud_logging.entries import stamp
from trainpool.emulator.cloud_logging.reader import Logs, projects_of
from trainpool.emulator.state import EmulatorState
from trainpool.errors import InputError

SERVICE = "google.logging.v2.LoggingServiceV2"
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
ORDERS = ("timestamp asc", "timestamp desc")
TAIL_POLL_S = 0.5
TAIL_SETTLE_S = 1.0
"""A tail sends an entry once it is this old: lines of several replicas are written by one
reader in the order it read them, so an older one never arrives after it."""


def _page(request: Any) -> tuple[int, int]:
    size = request.page_size
    if size < 0 or size > MAX_PAGE_SIZE:
        raise InputError.of(
            "page_size",
            f"{size}; accepted: 0 (the default, {DEFAULT_PAGE_SIZE}) to {MAX_PAGE_SIZE}",
        )
    token = request.page_token
    if token and not (token.isdigit() and len(token) <= 12):
        raise InputError.of("page_token", f"{token[:40]!r}; accepted: a token a previous page gave")
    return size or DEFAULT_PAGE_SIZE, int(token or 0)


def _now(shift_s: float = 0.0) -> str:
    """The real time (as the replicas' lines are stamped), in the entries' text form."""
    return stamp(datetime.fromtimestamp(time.time() + shift_s, timezone.utc).isoformat())


def _proto(entry: dict[str, Any]) -> Any:
    message = log_entry.LogEntry.pb(log_entry.LogEntry())
    json_format.ParseDict(entry, message, ignore_unknown_fields=True)
    return log_entry.LogEntry.wrap(message)


def _written(
    index: int, item: dict[str, Any], defaults: dict[str, Any], now: str
) -> dict[str, Any]:
    """Entry ``index`` of a WriteLogEntries request (``item``, JSON) with the request's
    ``defaults`` (its logName, resource and labels) filled in and stamped ``now``."""
    entry = {**item}
    entry.setdefault("logName", defaults.get("logName", ""))
    if "resource" not in entry:
        entry["resource"] = defaults.get("resource", {"type": "global", "labels": {}})
    entry["labels"] = {**defaults.get("labels", {}), **entry.get("labels", {})}
    if not entry["labels"]:
        entry.pop("labels")
    entry["timestamp"] = stamp(entry.get("timestamp", now))
    entry["receiveTimestamp"] = now
    entry.setdefault("severity", "DEFAULT")
    name = str(entry["logName"]).split("/")
    if len(name) != 4 or name[0] != "projects" or name[2] != "logs" or not name[3]:
        raise InputError.of(
            f"entries[{index}].log_name",
            f"{entry['logName']!r}; accepted: projects/PROJECT_ID/logs/LOG_ID",
        )
    return entry


class LoggingService:
    """The methods of LoggingServiceV2 served here, over the emulator's :class:`Logs`."""

    def __init__(self, logs: Logs) -> None:
        self.logs = logs

    def list_entries(self, request: lg.ListLogEntriesRequest) -> lg.ListLogEntriesResponse:
        projects = projects_of(request.resource_names)
        node = query.parse(request.filter)
        order = " ".join(request.order_by.lower().split()) or ORDERS[0]
        if order not in ORDERS:
            raise InputError.of(
                "order_by", f"{request.order_by!r}; accepted: {' or '.join(ORDERS)}"
            )
        size, start = _page(request)
        found = self.logs.matching(projects, node)
        if order == ORDERS[1]:
            found.reverse()
        page = found[start : start + size]
        token = str(start + size) if start + size < len(found) else ""
        return lg.ListLogEntriesResponse(entries=[_proto(e) for e in page], next_page_token=token)

    def write_entries(self, request: lg.WriteLogEntriesRequest) -> lg.WriteLogEntriesResponse:
        now = _now()
        defaults = json_format.MessageToDict(lg.WriteLogEntriesRequest.pb(request))
        written = [
            _written(index, item, defaults, now)
            for index, item in enumerate(defaults.get("entries", []))
        ]
        self.logs.write(written)
        return lg.WriteLogEntriesResponse()

    def list_logs(self, request: lg.ListLogsRequest) -> lg.ListLogsResponse:
        project = projects_of([request.parent], "parent")[0]
        size, start = _page(request)
        names = self.logs.log_names(project)
        token = str(start + size) if start + size < len(names) else ""
        return lg.ListLogsResponse(log_names=names[start : start + size], next_page_token=token)

    def tail(
        self, requests: Iterator[lg.TailLogEntriesRequest], active: Callable[[], bool]
    ) -> Iterator[lg.TailLogEntriesResponse]:
        first = next(iter(requests), None)
        if first is None:
            return
        projects = projects_of(first.resource_names)
        node = query.parse(first.filter)
        sent: tuple[str, str] = (_now(), "")
        while active():
            settled = _now(-TAIL_SETTLE_S)
            fresh = [
                e
                for e in self.logs.matching(projects, node)
                if sent < (e["timestamp"], e["insertId"]) and e["timestamp"] <= settled
            ]
            if fresh:
                sent = (fresh[-1]["timestamp"], fresh[-1]["insertId"])
                yield lg.TailLogEntriesResponse(entries=[_proto(e) for e in fresh])
            time.sleep(TAIL_POLL_S)


def handler(state: EmulatorState) -> Service:
    """The LoggingServiceV2 handler: ListLogEntries, WriteLogEntries, ListLogs and the
    TailLogEntries stream."""
    served = LoggingService(Logs(state))
    return service(
        SERVICE,
        {
            "ListLogEntries": (
                served.list_entries,
                lg.ListLogEntriesRequest,
                lg.ListLogEntriesResponse,
            ),
            "WriteLogEntries": (
                served.write_entries,
                lg.WriteLogEntriesRequest,
                lg.WriteLogEntriesResponse,
            ),
            "ListLogs": (served.list_logs, lg.ListLogsRequest, lg.ListLogsResponse),
        },
        streams={
            "TailLogEntries": (served.tail, lg.TailLogEntriesRequest, lg.TailLogEntriesResponse),
        },
    )
