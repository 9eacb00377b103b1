"""``google.cloud.aiplatform.v1.TensorboardService``: Vertex AI TensorBoard.

What the SDK's ``aiplatform.Tensorboard*`` classes, ``log_time_series_metrics`` and
``get_experiment_df`` (time series columns), ``aiplatform.upload_tb_log`` /
``start_upload_tb_log`` (the uploader) and a CustomJob's ``tensorboard``
(:mod:`trainpool.emulator.tensorboards.uploads`) call, kept by
:mod:`trainpool.emulator.tensorboards.store`. Here: the resources (Tensorboards, experiments,
runs, time series); their data methods are :mod:`trainpool.emulator.api.tensorboard_data`.
Not served (UNIMPLEMENTED, naming them): ``ReadTensorboardBlobData`` (a server stream; the
uploader writes blobs to Cloud Storage and the SDK never reads them back) and
``ReadTensorboardUsage`` (Google's monthly billing view).
"""

from __future__ import annotations

from typing import Any

from google.cloud.aiplatform_v1.types import tensorboard as tb
from google.cloud.aiplatform_v1.types import tensorboard_experiment as tbe
from google.cloud.aiplatform_v1.types import tensorboard_run as tbr
from google.cloud.aiplatform_v1.types import tensorboard_service as ts
from google.cloud.aiplatform_v1.types import tensorboard_time_series as tbts
from google.longrunning import operations_pb2

from trainpool.emulator.api import requests
from trainpool.emulator.api.rpc import Service, service
from trainpool.emulator.api.tensorboard_data import data_methods
from trainpool.emulator.api.tensorboard_names import check_name
from trainpool.emulator.jobs.manager import JobManager
from trainpool.emulator.records.kinds import (
    TENSORBOARD_EXPERIMENTS,
    TENSORBOARD_RUNS,
    TENSORBOARD_TIME_SERIES,
    TENSORBOARDS,
    Kind,
)
from trainpool.emulator.state import EmulatorState
from trainpool.emulator.tensorboards.store import MAX_BATCH, tensorboards_of
from trainpool.errors import InputError, brief

SERVICE = "google.cloud.aiplatform.v1.TensorboardService"
_UPDATABLE = {
    TENSORBOARDS.collection: ("display_name", "description", "labels", "is_default"),
    TENSORBOARD_EXPERIMENTS.collection: ("display_name", "description", "labels"),
    TENSORBOARD_RUNS.collection: ("display_name", "description", "labels"),
    TENSORBOARD_TIME_SERIES.collection: ("display_name", "description", "plugin_data"),
}


def handler(state: EmulatorState, manager: JobManager) -> Service:
    """The TensorboardService handler."""
    store = tensorboards_of(state)

    def checked(resource: Any, field: str, *, required: bool) -> None:
        requests.check_display_name(
            resource.display_name, f"{field}.display_name", required=required
        )
        if "labels" in type(resource).meta.fields:
            requests.check_labels(resource.labels, f"{field}.labels")
        requests.check_no_nul(type(resource).to_dict(resource), field)

    def create_tensorboard(request: ts.CreateTensorboardRequest) -> operations_pb2.Operation:
        requests.check_parent(request.parent)
        checked(request.tensorboard, "tensorboard", required=True)
        if request.tensorboard.encryption_spec.kms_key_name:
            raise InputError.of(
                "tensorboard.encryption_spec",
                "is set; accepted: none (the emulator keeps no keys: Cloud KMS is not emulated)",
            )
        created = store.create(TENSORBOARDS, request.parent, "", request.tensorboard, "name")
        return state.finished(created.name, created)

    def creator(kind: Kind, field: str, id_field: str, parent_kind: Kind) -> Any:
        def create(request: Any) -> Any:
            check_name(request.parent, parent_kind, "parent")
            resource = getattr(request, field)
            checked(resource, field, required=kind is TENSORBOARD_TIME_SERIES)
            return store.create(
                kind, request.parent, getattr(request, id_field), resource, id_field
            )

        return create

    def getter(kind: Kind) -> Any:
        def get(request: Any) -> Any:
            check_name(request.name, kind)
            return store.require(kind, request.name)

        return get

    def lister(kind: Kind, parent_kind: Kind | None, response_type: Any, field: str) -> Any:
        def list_resources(request: Any) -> Any:
            if parent_kind is None:
                requests.check_parent(request.parent)
            else:
                check_name(request.parent, parent_kind, "parent")
            items, token = store.page(
                kind,
                request.parent,
                filter=request.filter,
                page_size=request.page_size,
                page_token=request.page_token,
                order_by=request.order_by,
            )
            return response_type(**{field: items, "next_page_token": token})

        return list_resources

    def updater(kind: Kind, field: str, lro: bool = False) -> Any:
        def update(request: Any) -> Any:
            resource = getattr(request, field)
            check_name(resource.name, kind, f"{field}.name")
            checked(resource, field, required=False)
            paths = list(type(request).pb(request).update_mask.paths)
            updated = store.update(kind, resource, paths, _UPDATABLE[kind.collection])
            return state.finished(updated.name, updated) if lro else updated

        return update

    def deleter(kind: Kind) -> Any:
        def delete(request: Any) -> operations_pb2.Operation:
            check_name(request.name, kind)
            store.delete(kind, request.name)
            return state.finished(request.name)

        return delete

    def batch_runs(request: ts.BatchCreateTensorboardRunsRequest) -> Any:
        check_name(request.parent, TENSORBOARD_EXPERIMENTS, "parent")
        batch(request.requests, request.parent, lambda r: r.parent)
        created = [
            creator(
                TENSORBOARD_RUNS, "tensorboard_run", "tensorboard_run_id", TENSORBOARD_EXPERIMENTS
            )(r)
            for r in request.requests
        ]
        return ts.BatchCreateTensorboardRunsResponse(tensorboard_runs=created)

    def batch_series(request: ts.BatchCreateTensorboardTimeSeriesRequest) -> Any:
        check_name(request.parent, TENSORBOARD_EXPERIMENTS, "parent")
        batch(request.requests, request.parent, lambda r: r.parent.rsplit("/runs/", 1)[0])
        create = creator(
            TENSORBOARD_TIME_SERIES,
            "tensorboard_time_series",
            "tensorboard_time_series_id",
            TENSORBOARD_RUNS,
        )
        return ts.BatchCreateTensorboardTimeSeriesResponse(
            tensorboard_time_series=[create(r) for r in request.requests]
        )

    def batch(items: Any, parent: str, owner: Any) -> None:
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

    op = operations_pb2.Operation
    experiment_create = creator(
        TENSORBOARD_EXPERIMENTS, "tensorboard_experiment", "tensorboard_experiment_id", TENSORBOARDS
    )
    run_create = creator(
        TENSORBOARD_RUNS, "tensorboard_run", "tensorboard_run_id", TENSORBOARD_EXPERIMENTS
    )
    series_create = creator(
        TENSORBOARD_TIME_SERIES,
        "tensorboard_time_series",
        "tensorboard_time_series_id",
        TENSORBOARD_RUNS,
    )
    return service(
        SERVICE,
        {
            "CreateTensorboard": (create_tensorboard, ts.CreateTensorboardRequest, op),
            "GetTensorboard": (getter(TENSORBOARDS), ts.GetTensorboardRequest, tb.Tensorboard),
            "UpdateTensorboard": (
                updater(TENSORBOARDS, "tensorboard", lro=True),
                ts.UpdateTensorboardRequest,
                op,
            ),
            "ListTensorboards": (
                lister(TENSORBOARDS, None, ts.ListTensorboardsResponse, "tensorboards"),
                ts.ListTensorboardsRequest,
                ts.ListTensorboardsResponse,
            ),
            "DeleteTensorboard": (deleter(TENSORBOARDS), ts.DeleteTensorboardRequest, op),
            "CreateTensorboardExperiment": (
                experiment_create,
                ts.CreateTensorboardExperimentRequest,
                tbe.TensorboardExperiment,
            ),
            "GetTensorboardExperiment": (
                getter(TENSORBOARD_EXPERIMENTS),
                ts.GetTensorboardExperimentRequest,
                tbe.TensorboardExperiment,
            ),
            "UpdateTensorboardExperiment": (
                updater(TENSORBOARD_EXPERIMENTS, "tensorboard_experiment"),
                ts.UpdateTensorboardExperimentRequest,
                tbe.TensorboardExperiment,
            ),
            "ListTensorboardExperiments": (
                lister(
                    TENSORBOARD_EXPERIMENTS,
                    TENSORBOARDS,
                    ts.ListTensorboardExperimentsResponse,
                    "tensorboard_experiments",
                ),
                ts.ListTensorboardExperimentsRequest,
                ts.ListTensorboardExperimentsResponse,
            ),
            "DeleteTensorboardExperiment": (
                deleter(TENSORBOARD_EXPERIMENTS),
                ts.DeleteTensorboardExperimentRequest,
                op,
            ),
            "CreateTensorboardRun": (
                run_create,
                ts.CreateTensorboardRunRequest,
                tbr.TensorboardRun,
            ),
            "BatchCreateTensorboardRuns": (
                batch_runs,
                ts.BatchCreateTensorboardRunsRequest,
                ts.BatchCreateTensorboardRunsResponse,
            ),
            "GetTensorboardRun": (
                getter(TENSORBOARD_RUNS),
                ts.GetTensorboardRunRequest,
                tbr.TensorboardRun,
            ),
            "UpdateTensorboardRun": (
                updater(TENSORBOARD_RUNS, "tensorboard_run"),
                ts.UpdateTensorboardRunRequest,
                tbr.TensorboardRun,
            ),
            "ListTensorboardRuns": (
                lister(
                    TENSORBOARD_RUNS,
                    TENSORBOARD_EXPERIMENTS,
                    ts.ListTensorboardRunsResponse,
                    "tensorboard_runs",
                ),
                ts.ListTensorboardRunsRequest,
                ts.ListTensorboardRunsResponse,
            ),
            "DeleteTensorboardRun": (deleter(TENSORBOARD_RUNS), ts.DeleteTensorboardRunRequest, op),
            "BatchCreateTensorboardTimeSeries": (
                batch_series,
                ts.BatchCreateTensorboardTimeSeriesRequest,
                ts.BatchCreateTensorboardTimeSeriesResponse,
            ),
            "CreateTensorboardTimeSeries": (
                series_create,
                ts.CreateTensorboardTimeSeriesRequest,
                tbts.TensorboardTimeSeries,
            ),
            "GetTensorboardTimeSeries": (
                getter(TENSORBOARD_TIME_SERIES),
                ts.GetTensorboardTimeSeriesRequest,
                tbts.TensorboardTimeSeries,
            ),
            "UpdateTensorboardTimeSeries": (
                updater(TENSORBOARD_TIME_SERIES, "tensorboard_time_series"),
                ts.UpdateTensorboardTimeSeriesRequest,
                tbts.TensorboardTimeSeries,
            ),
            "ListTensorboardTimeSeries": (
                lister(
                    TENSORBOARD_TIME_SERIES,
                    TENSORBOARD_RUNS,
                    ts.ListTensorboardTimeSeriesResponse,
                    "tensorboard_time_series",
                ),
                ts.ListTensorboardTimeSeriesRequest,
                ts.ListTensorboardTimeSeriesResponse,
            ),
            "DeleteTensorboardTimeSeries": (
                deleter(TENSORBOARD_TIME_SERIES),
                ts.DeleteTensorboardTimeSeriesRequest,
                op,
            ),
            **data_methods(store.points),
        },
    )
