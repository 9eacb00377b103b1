"""``google.cloud.aiplatform.v1.TensorboardService``: Vertex AI TensorBoard.

What the SDK's ``aiplatform.Tensorboard*`` classes, ``log_time_series_metrics`` and
``get_experiment_df`` (time series columns), ``aiplatform.upload_tb_log`` /
``start_upload_tb_log`` (the uploader) and a CustomJob's ``tensorboard``
(:mod:`trainpool.emulator.tensorboards.uploads`) call, kept by
:mod:`trainpool.emulator.tensorboards.tensorboard_records`.
Here: the resources (Tensorboards, experiments,
runs, time series), declared to :mod:`trainpool.emulator.standard_methods`, which serves their
Create, Get, List, Update and Delete, and the batch creates; their data methods are
:mod:`trainpool.emulator.tensorboards.tensorboard_data`.
Not served (UNIMPLEMENTED, naming them): ``ReadTensorboardBlobData`` (a server stream; the
uploader writes blobs to Cloud Storage and the SDK never reads them back) and
``ReadTensorboardUsage`` (Google's monthly billing view).
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import tensorboard_service as ts

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, service
from trainpool.emulator.records.kinds import (
    TENSORBOARD_EXPERIMENTS,
    TENSORBOARD_RUNS,
    TENSORBOARD_TIME_SERIES,
    TENSORBOARDS,
    Kind,
)
from trainpool.emulator.standard_methods import Resource, create, methods
from trainpool.emulator.state import EmulatorState
from trainpool.emulator.tensorboards.tensorboard_data import data_methods
from trainpool.emulator.tensorboards.tensorboard_names import check_name
from trainpool.emulator.tensorboards.tensorboard_records import MAX_BATCH, TensorboardRecords
from trainpool.errors import InputError, brief

SERVICE = "google.cloud.aiplatform.v1.TensorboardService"
_UPDATABLE = {
    TENSORBOARDS.collection: ("display_name", "description", "labels", "is_default"),
    TENSORBOARD_EXPERIMENTS.collection: ("display_name", "description", "labels"),
    TENSORBOARD_RUNS.collection: ("display_name", "description", "labels"),
    TENSORBOARD_TIME_SERIES.collection: ("display_name", "description", "plugin_data"),
}


class _MaskedRecords:
    """:class:`TensorboardRecords` as the standard methods call them: an update reads the
    request's mask against :data:`_UPDATABLE`."""

    def __init__(self, records: TensorboardRecords) -> None:
        self.records = records
        self.create = records.create
        self.require = records.require

    def page(self, kind: Kind, parent: str, **query: Any) -> tuple[list[Any], str]:
        return self.records.page(kind, parent, **query)

    def update(self, kind: Kind, resource: Any, request: Any) -> Any:
        paths = list(type(request).pb(request).update_mask.paths)
        return self.records.update(kind, resource, paths, _UPDATABLE[kind.collection])

    def delete(self, kind: Kind, request: Any) -> None:
        self.records.delete(kind, request.name)


def checked(resource: Any, field: str, creating: bool) -> None:
    """A resource's display name (required when a Tensorboard or a time series is
    created), labels and text; a Tensorboard's encryption (Cloud KMS is not emulated)."""
    kind_requires = isinstance(resource, (TENSORBOARDS.message, TENSORBOARD_TIME_SERIES.message))
    requests.check_display_name(
        resource.display_name, f"{field}.display_name", required=creating and kind_requires
    )
    if "labels" in type(resource).meta.fields:
        requests.check_labels(resource.labels, f"{field}.labels")
    requests.check_no_nul(type(resource).to_dict(resource), field)
    if creating and isinstance(resource, TENSORBOARDS.message):
        if resource.encryption_spec.kms_key_name:
            raise InputError.of(
                "tensorboard.encryption_spec",
                "is set; accepted: none (the emulator keeps no keys: Cloud KMS is not emulated)",
            )


def resources(store: TensorboardRecords) -> tuple[Resource, ...]:
    """The TensorBoard resources, declared to :mod:`trainpool.emulator.standard_methods`."""
    kept = _MaskedRecords(store)

    def named(kind: Kind) -> Any:
        return lambda name, field: check_name(name, kind, field)

    def under(kind: Kind) -> Any:
        return lambda parent, field: check_name(parent, kind, field)

    return (
        Resource(
            TENSORBOARDS,
            kept,
            requests.check_parent,
            named(TENSORBOARDS),
            checked,
            ids=False,
            operations=("Create", "Update", "Delete"),
        ),
        Resource(
            TENSORBOARD_EXPERIMENTS,
            kept,
            under(TENSORBOARDS),
            named(TENSORBOARD_EXPERIMENTS),
            checked,
            operations=("Delete",),
        ),
        Resource(
            TENSORBOARD_RUNS,
            kept,
            under(TENSORBOARD_EXPERIMENTS),
            named(TENSORBOARD_RUNS),
            checked,
            operations=("Delete",),
        ),
        Resource(
            TENSORBOARD_TIME_SERIES,
            kept,
            under(TENSORBOARD_RUNS),
            named(TENSORBOARD_TIME_SERIES),
            checked,
            operations=("Delete",),
            plural="TensorboardTimeSeries",
        ),
    )


def handler(state: EmulatorState, store: TensorboardRecords) -> Service:
    """The TensorboardService handler, over the emulator's Tensorboards ``store``."""
    declared = resources(store)
    runs, series = (create(r, state.finished) for r in declared[2:])

    def batch_runs(request: ts.BatchCreateTensorboardRunsRequest) -> Any:
        check_name(request.parent, TENSORBOARD_EXPERIMENTS, "parent")
        batch(request.requests, request.parent, lambda r: r.parent)
        created = [runs(r) for r in request.requests]
        return ts.BatchCreateTensorboardRunsResponse(tensorboard_runs=created)

    def batch_series(request: ts.BatchCreateTensorboardTimeSeriesRequest) -> Any:
        check_name(request.parent, TENSORBOARD_EXPERIMENTS, "parent")
        batch(request.requests, request.parent, lambda r: r.parent.rsplit("/runs/", 1)[0])
        return ts.BatchCreateTensorboardTimeSeriesResponse(
            tensorboard_time_series=[series(r) for r in request.requests]
        )

    return service(
        SERVICE,
        {
            **methods(ts, state.finished, *declared),
            "BatchCreateTensorboardRuns": (
                batch_runs,
                ts.BatchCreateTensorboardRunsRequest,
                ts.BatchCreateTensorboardRunsResponse,
            ),
            "BatchCreateTensorboardTimeSeries": (
                batch_series,
                ts.BatchCreateTensorboardTimeSeriesRequest,
                ts.BatchCreateTensorboardTimeSeriesResponse,
            ),
            **data_methods(store.points),
        },
    )


def batch(items: Any, parent: str, owner: Any) -> None:
    """A batch's size, and each of its requests under the batch's ``parent``."""
    if len(items) > MAX_BATCH:
        raise InputError.of(
            "requests", f"has {len(items):,} requests; accepted: at most {MAX_BATCH:,}"
        )
    for index, item in enumerate(items):
        if owner(item) != parent:
            raise InputError.of(
                f"requests[{index}].parent",
                f"{brief(item.parent)} is not under {parent}; accepted: resources of the "
                "batch's parent",
            )
