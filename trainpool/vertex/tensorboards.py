"""A Vertex TensorBoard experiment's scalars as TensorBoard event files, to open locally.

Vertex keeps what its uploader brought (a job's ``AIP_TENSORBOARD_LOG_DIR``) and what
``log_time_series_metrics`` wrote as the time series of a TensorboardExperiment's runs.
:func:`find` resolves a name a user knows (an Experiment's id, a CustomJob's id: Vertex names
the TensorboardExperiment of a job's uploads after the job's id, the SDK's
``console_utils.py``; or the resource name itself); :func:`export` writes each run's scalar
series (``ExportTensorboardTimeSeriesData``, paged) into ``<out>/<run id>/`` as an event file
TensorBoard reads, with TensorBoard's own writer (the ``tensorboard`` extra). Against the
emulator or Vertex alike (:mod:`trainpool.vertex.clients`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from trainpool.errors import InputError

EXPERIMENTS = "/experiments/"


def find(client: Any, parent: str, name: str) -> list[str]:
    """The TensorboardExperiments ``name`` means under ``parent`` (``projects/P/locations/L``):
    itself when it is a resource name, else every one whose id is ``name``, in any of the
    location's Tensorboards."""
    if EXPERIMENTS in name:
        return [client.get_tensorboard_experiment(name=name).name]
    found = []
    for board in client.list_tensorboards(parent=parent):
        for experiment in client.list_tensorboard_experiments(parent=board.name):
            if experiment.name.rsplit("/", 1)[1] == name:
                found.append(experiment.name)
    if not found:
        raise InputError.of(
            "NAME",
            f"{name!r}: no TensorBoard experiment of that id in {parent}; accepted: an "
            "Experiment's id, a CustomJob's id run with tensorboard=..., or "
            "projects/P/locations/L/tensorboards/T/experiments/E",
        )
    return found


def _points(client: Any, series: str) -> list[Any]:
    points: list[Any] = []
    token = ""
    while True:
        page = client.export_tensorboard_time_series_data(
            request={"tensorboard_time_series": series, "page_size": 1000, "page_token": token}
        )
        points += list(page.time_series_data_points)
        token = page.next_page_token
        if not token:
            return points


def export(client: Any, experiment: str, out: Path) -> dict[str, int]:
    """Write each run's scalars of TensorboardExperiment ``experiment`` under ``out``;
    ``{run id: points written}``."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    written: dict[str, int] = {}
    for run in client.list_tensorboard_runs(parent=experiment):
        run_id = run.name.rsplit("/", 1)[1]
        folder = out / run_id
        folder.mkdir(parents=True, exist_ok=True)
        writer = EventFileWriter(str(folder))
        count = 0
        for series in client.list_tensorboard_time_series(parent=run.name):
            if series.value_type.name != "SCALAR":
                continue
            for point in _points(client, series.name):
                value = summary_pb2.Summary.Value(
                    tag=series.display_name, simple_value=point.scalar.value
                )
                stamp = point.wall_time.timestamp() if point.wall_time else time.time()
                writer.add_event(
                    event_pb2.Event(
                        wall_time=stamp, step=point.step, summary=summary_pb2.Summary(value=[value])
                    )
                )
                count += 1
        writer.close()
        written[run_id] = count
    return written
