"""The data methods of ``google.cloud.aiplatform.v1.TensorboardService``: points written
to a run or an experiment's runs, a time series read, read in batch and exported, and a
Tensorboard's size (the resources themselves:
:mod:`trainpool.emulator.tensorboards.tensorboard_service`; the points are kept by
:mod:`trainpool.emulator.tensorboards.points`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.cloud.aiplatform_v1.types import tensorboard_service as ts

from trainpool.emulator.records.kinds import (
    TENSORBOARD_EXPERIMENTS,
    TENSORBOARD_RUNS,
    TENSORBOARD_TIME_SERIES,
    TENSORBOARDS,
)
from trainpool.emulator.tensorboards.points import TensorboardPoints
from trainpool.emulator.tensorboards.tensorboard_names import check_name
from trainpool.errors import InputError, brief


class TensorboardData:
    """The data methods of TensorboardService, on the points a store keeps."""

    def __init__(self, points: TensorboardPoints) -> None:
        self.points = points

    def write_run(self, request: ts.WriteTensorboardRunDataRequest) -> Any:
        check_name(request.tensorboard_run, TENSORBOARD_RUNS, "tensorboard_run")
        self.points.write_run(request.tensorboard_run, request.time_series_data)
        return ts.WriteTensorboardRunDataResponse()

    def write_experiment(self, request: ts.WriteTensorboardExperimentDataRequest) -> Any:
        check_name(
            request.tensorboard_experiment, TENSORBOARD_EXPERIMENTS, "tensorboard_experiment"
        )
        for index, run_request in enumerate(request.write_run_data_requests):
            field = f"write_run_data_requests[{index}].tensorboard_run"
            check_name(run_request.tensorboard_run, TENSORBOARD_RUNS, field)
            if not run_request.tensorboard_run.startswith(request.tensorboard_experiment + "/"):
                raise InputError.of(
                    field,
                    f"{brief(run_request.tensorboard_run)} is not a run of "
                    f"{request.tensorboard_experiment}",
                )
        for index, run_request in enumerate(request.write_run_data_requests):
            self.points.write_run(
                run_request.tensorboard_run,
                run_request.time_series_data,
                f"write_run_data_requests[{index}].time_series_data",
            )
        return ts.WriteTensorboardExperimentDataResponse()

    def read(self, request: ts.ReadTensorboardTimeSeriesDataRequest) -> Any:
        check_name(
            request.tensorboard_time_series, TENSORBOARD_TIME_SERIES, "tensorboard_time_series"
        )
        no_filter(request.filter)
        return ts.ReadTensorboardTimeSeriesDataResponse(
            time_series_data=self.points.read(
                request.tensorboard_time_series, request.max_data_points
            )
        )

    def batch_read(self, request: ts.BatchReadTensorboardTimeSeriesDataRequest) -> Any:
        check_name(request.tensorboard, TENSORBOARDS, "tensorboard")
        data = []
        for index, name in enumerate(request.time_series):
            check_name(name, TENSORBOARD_TIME_SERIES, f"time_series[{index}]")
            if not name.startswith(request.tensorboard + "/"):
                raise InputError.of(
                    f"time_series[{index}]", f"{brief(name)} is not in {request.tensorboard}"
                )
            data.append(self.points.read(name, 0))
        return ts.BatchReadTensorboardTimeSeriesDataResponse(time_series_data=data)

    def export(self, request: ts.ExportTensorboardTimeSeriesDataRequest) -> Any:
        check_name(
            request.tensorboard_time_series, TENSORBOARD_TIME_SERIES, "tensorboard_time_series"
        )
        no_filter(request.filter)
        found, token = self.points.export(
            request.tensorboard_time_series, request.page_size, request.page_token, request.order_by
        )
        return ts.ExportTensorboardTimeSeriesDataResponse(
            time_series_data_points=found, next_page_token=token
        )

    def size(self, request: ts.ReadTensorboardSizeRequest) -> Any:
        check_name(request.tensorboard, TENSORBOARDS, "tensorboard")
        return ts.ReadTensorboardSizeResponse(
            storage_size_byte=self.points.size(request.tensorboard)
        )


def no_filter(text: str) -> None:
    """INVALID_ARGUMENT for a read's ``filter``: Vertex documents no grammar for it."""
    if text.strip():
        raise InputError.of(
            "filter",
            f"{brief(text)}: the emulator reads a time series' data whole; accepted: no "
            "filter (Vertex documents no grammar for it)",
        )


def data_methods(points: TensorboardPoints) -> dict[str, tuple[Callable[[Any], Any], Any, Any]]:
    """``{method: (function, RequestType, ResponseType)}`` of the data methods, on ``points``."""
    data = TensorboardData(points)
    return {
        "ReadTensorboardSize": (
            data.size,
            ts.ReadTensorboardSizeRequest,
            ts.ReadTensorboardSizeResponse,
        ),
        "BatchReadTensorboardTimeSeriesData": (
            data.batch_read,
            ts.BatchReadTensorboardTimeSeriesDataRequest,
            ts.BatchReadTensorboardTimeSeriesDataResponse,
        ),
        "ReadTensorboardTimeSeriesData": (
            data.read,
            ts.ReadTensorboardTimeSeriesDataRequest,
            ts.ReadTensorboardTimeSeriesDataResponse,
        ),
        "WriteTensorboardExperimentData": (
            data.write_experiment,
            ts.WriteTensorboardExperimentDataRequest,
            ts.WriteTensorboardExperimentDataResponse,
        ),
        "WriteTensorboardRunData": (
            data.write_run,
            ts.WriteTensorboardRunDataRequest,
            ts.WriteTensorboardRunDataResponse,
        ),
        "ExportTensorboardTimeSeriesData": (
            data.export,
            ts.ExportTensorboardTimeSeriesDataRequest,
            ts.ExportTensorboardTimeSeriesDataResponse,
        ),
    }
