"""trainpool.vertex.pipelines against the emulator's Pipeline and Schedule services over gRPC."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.pipelines import compile_fixture
from google.api_core import exceptions
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.types.pipeline_state import PipelineState
from google.protobuf import json_format

import trainpool.emulator as emulator
from trainpool import config
from trainpool.spec.pipeline_params import coerce_values, pipeline_inputs
from trainpool.vertex import clients
from trainpool.vertex.pipelines import (
    SubmitError,
    Target,
    build_pipeline_job,
    build_schedule,
    create_or_replace_schedule,
    cron_with_timezone,
    schedules_named,
    submit,
)

pytestmark = pytest.mark.timeout(120)

TARGET = Target(
    "demo-project", "us-central1", "gs://demo-bucket/root", "sa@demo.iam.gserviceaccount.com"
)
DONE = {
    PipelineState.PIPELINE_STATE_SUCCEEDED,
    PipelineState.PIPELINE_STATE_FAILED,
    PipelineState.PIPELINE_STATE_CANCELLED,
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_fixture("tiny", tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with emulator.start(tmp_path) as running:
        monkeypatch.setenv(config.EMULATOR_ENV, running.address)
        yield tmp_path


def wait(name: str, timeout: float = 60.0) -> Any:
    client = clients.pipeline_client(TARGET.location)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get_pipeline_job(name=name)
        if job.state in DONE:
            return job
        time.sleep(0.1)
    raise AssertionError(f"{name} still {job.state.name} after {timeout}s")


def received_params(job: Any) -> dict[str, Any]:
    """The parameter values a server received, typed by the pipeline spec it received."""
    message = type(job).pb(job)
    spec = json_format.MessageToDict(message.pipeline_spec)
    values = json_format.MessageToDict(message.runtime_config)["parameterValues"]
    return coerce_values(values, pipeline_inputs(spec))


def test_the_request_is_built_offline_with_caching_off(tiny: Path) -> None:
    job_id, job = build_pipeline_job(tiny, TARGET, {"a": 5, "label": "7"}, "nightly")
    assert job_id.startswith("tiny-") and len(job_id) == len("tiny-") + 14
    assert job.display_name == "nightly"
    assert job.service_account == TARGET.service_account
    assert job.runtime_config.gcs_output_directory == "gs://demo-bucket/root"
    assert received_params(job) == {"a": 5, "label": "7"}
    tasks = json_format.MessageToDict(type(job).pb(job).pipeline_spec)["root"]["dag"]["tasks"]
    assert {name: t["cachingOptions"] for name, t in tasks.items()} == {
        "add": {"enableCache": False},
        "describe": {"enableCache": False},
        "fail-when": {"enableCache": False},
    }


def test_bad_target_is_refused_with_every_problem(tiny: Path) -> None:
    bad = Target("Demo/Project", "us central", "/tmp/root", "not-an-email")
    with pytest.raises(SubmitError) as caught:
        build_pipeline_job(tiny, bad, {})
    assert [str(p) for p in caught.value.problems] == [
        "--project: 'Demo/Project'; accepted: a project id such as my-project",
        "--location: 'us central'; accepted: a Vertex AI region such as us-central1",
        "--pipeline-root: '/tmp/root'; accepted: gs://BUCKET or gs://BUCKET/PATH",
        "--service-account: 'not-an-email'; accepted: an email such as "
        "trainer@my-project.iam.gserviceaccount.com",
    ]


def test_unknown_parameter_is_refused_by_the_sdk(tiny: Path) -> None:
    with pytest.raises(SubmitError, match="--param: .*nope"):
        build_pipeline_job(tiny, TARGET, {"nope": 1})


def test_cron_and_timezone() -> None:
    assert cron_with_timezone("0 3 * * *") == "0 3 * * *"
    assert cron_with_timezone(" 0  3 * * 1-5 ", "Europe/Paris") == "TZ=Europe/Paris 0 3 * * 1-5"
    with pytest.raises(SubmitError) as caught:
        cron_with_timezone("TZ=UTC 0 3 * * *", "Mars/Base")
    assert [str(p) for p in caught.value.problems] == [
        "--schedule: 'TZ=UTC 0 3 * * *' carries its own time zone; accepted: the five cron "
        "fields, with the zone in --timezone",
        "--timezone: time zone 'Mars/Base' is unknown; accepted: an IANA time zone such as "
        "America/New_York or UTC",
    ]


@pytest.mark.parametrize("cron", ["99 99 * * *", "0 3 * *", "0 3 32 * *", "0 3 * * 8", "a b c d e"])
def test_cron_out_of_range_is_refused(cron: str) -> None:
    with pytest.raises(SubmitError, match=re.escape(f"--schedule: '{cron}' is not a cron")):
        cron_with_timezone(cron)


def test_submitted_job_carries_the_parameters_and_runs_to_succeeded(tiny: Path, emu: Path) -> None:
    job_id, job = build_pipeline_job(tiny, TARGET, {"a": 5, "b": 6, "label": "x", "tags": [1]})
    created = submit(job_id, job, TARGET)
    assert created.name == f"{TARGET.parent}/pipelineJobs/{job_id}"
    assert created.display_name == "tiny"
    assert received_params(created) == {"a": 5, "b": 6, "label": "x", "tags": [1]}
    assert type(received_params(created)["a"]) is int
    done = wait(created.name)
    assert done.state == PipelineState.PIPELINE_STATE_SUCCEEDED, done.error.message
    assert done.create_time <= done.start_time <= done.end_time
    run_log = (emu / "pipelines" / job_id / "run.log").read_text()
    assert '\\"total\\": 11' in run_log
    listed = clients.pipeline_client(TARGET.location).list_pipeline_jobs(parent=TARGET.parent)
    assert [j.name for j in listed] == [created.name]


def test_a_failing_pipeline_job_ends_failed(tiny: Path, emu: Path) -> None:
    job_id, job = build_pipeline_job(tiny, TARGET, {"fail": True})
    done = wait(submit(job_id, job, TARGET).name)
    assert done.state == PipelineState.PIPELINE_STATE_FAILED
    assert done.error.message.startswith(
        "the local run exited with status 1: pipeline tiny FAILED: Pipeline 'tiny' finished with "
        "status FAILURE. Inner task failed: 'fail-when'. (log: "
    )


def test_cancel_stops_the_local_run(tiny: Path, emu: Path) -> None:
    job_id, job = build_pipeline_job(tiny, TARGET, {"pause": 60.0})
    created = submit(job_id, job, TARGET)
    client = clients.pipeline_client(TARGET.location)
    client.cancel_pipeline_job(name=created.name)
    done = wait(created.name, timeout=20)
    assert done.state == PipelineState.PIPELINE_STATE_CANCELLED
    with pytest.raises(exceptions.FailedPrecondition, match="already PIPELINE_STATE_CANCELLED"):
        client.cancel_pipeline_job(name=created.name)


def test_emulator_refuses_bad_pipeline_jobs(tiny: Path, emu: Path) -> None:
    _, job = build_pipeline_job(tiny, TARGET, {})
    job.runtime_config.parameter_values["nope"] = 1
    client = clients.pipeline_client(TARGET.location)
    with pytest.raises(exceptions.InvalidArgument, match="nope not declared by the pipeline"):
        client.create_pipeline_job(parent=TARGET.parent, pipeline_job=job)
    with pytest.raises(exceptions.NotFound):
        client.get_pipeline_job(name=f"{TARGET.parent}/pipelineJobs/missing")
    assert list(client.list_pipeline_jobs(parent=TARGET.parent)) == []


def test_replacing_a_schedule_leaves_exactly_one(tiny: Path, emu: Path) -> None:
    _, other_job = build_pipeline_job(tiny, TARGET, {})
    other, _ = create_or_replace_schedule(
        build_schedule(other_job, TARGET, "0 1 * * *", "other"), TARGET
    )
    first_names = []
    for a in (1, 2):
        _, job = build_pipeline_job(tiny, TARGET, {"a": a})
        request = build_schedule(job, TARGET, "TZ=Europe/Paris 0 3 * * *", "nightly")
        created, deleted = create_or_replace_schedule(request, TARGET)
        assert deleted == first_names
        first_names = [created.name]
    left = schedules_named("nightly", TARGET)
    assert [s.name for s in left] == first_names
    kept = left[0]
    assert kept.cron == "TZ=Europe/Paris 0 3 * * *"
    assert kept.max_concurrent_run_count == 1
    assert (kept.max_concurrent_active_run_count, kept.allow_queueing) == (1, False)
    assert kept.state == aiplatform_v1.Schedule.State.ACTIVE
    embedded = kept.create_pipeline_job_request
    assert embedded.parent == TARGET.parent
    assert embedded.pipeline_job.service_account == TARGET.service_account
    assert received_params(embedded.pipeline_job) == {"a": 2}
    assert [s.name for s in schedules_named("other", TARGET)] == [other.name]


def test_emulator_refuses_bad_schedules(tiny: Path, emu: Path) -> None:
    _, job = build_pipeline_job(tiny, TARGET, {})
    client = clients.schedule_client(TARGET.location)
    bad_cron = build_schedule(job, TARGET, "TZ=Mars/Base 0 3 * * *", "x")
    with pytest.raises(exceptions.InvalidArgument, match="time zone 'Mars/Base' is unknown"):
        client.create_schedule(parent=TARGET.parent, schedule=bad_cron)
    out_of_range = build_schedule(job, TARGET, "0 3 * * *", "x")
    out_of_range.cron = "99 99 * * *"
    with pytest.raises(exceptions.InvalidArgument, match="'99 99 \\* \\* \\*' is not a cron"):
        client.create_schedule(parent=TARGET.parent, schedule=out_of_range)
    no_limit = build_schedule(job, TARGET, "0 3 * * *", "x")
    no_limit.max_concurrent_run_count = 0
    with pytest.raises(exceptions.InvalidArgument, match="max_concurrent_run_count: 0"):
        client.create_schedule(parent=TARGET.parent, schedule=no_limit)
    assert list(client.list_schedules(parent=TARGET.parent)) == []


def test_a_standalone_emulator_runs_submitted_pipelines(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`trainpool emulator` in its own process, which has no VERTEX_AI_EMULATOR_HOST."""
    env = {k: v for k, v in os.environ.items() if k != config.EMULATOR_ENV}
    server = subprocess.Popen(
        [sys.executable, "-m", "trainpool.cli", "emulator", "--root", str(tmp_path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        address = server.stdout.readline().split(" listening on ")[1].split()[0]
        monkeypatch.setenv(config.EMULATOR_ENV, address)
        job_id, job = build_pipeline_job(tiny, TARGET, {"a": 2, "b": 3})
        done = wait(submit(job_id, job, TARGET).name)
        assert done.state == PipelineState.PIPELINE_STATE_SUCCEEDED, done.error.message
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_local_run_that_cannot_start_fails_the_job_instead_of_hanging(
    tiny: Path, emu: Path
) -> None:
    job_id, job = build_pipeline_job(tiny, TARGET, {})
    (emu / "pipelines" / job_id / "run.log").mkdir(parents=True)  # the log cannot be opened
    done = wait(submit(job_id, job, TARGET).name, timeout=10)
    assert done.state == PipelineState.PIPELINE_STATE_FAILED
    assert "could not start the local run" in done.error.message
