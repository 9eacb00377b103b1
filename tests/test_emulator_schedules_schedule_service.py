"""The emulator's ScheduleService fires schedules as the Vertex API reference says, on the
emulator's clock, over real gRPC with the official ScheduleServiceClient.

Quotes are from google/cloud/aiplatform/v1/schedule.proto and schedule_service.proto
(the REST reference, https://cloud.google.com/vertex-ai/docs/reference/rest/v1/
projects.locations.schedules, has the same text). Each test moves the emulator's clock
(``trainpool.emulator.v1.Clock/AdvanceClock``) to a fixed time in the future first, so the
fire times are exact.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fixtures.pipelines import compile_fixture
from google.api_core import exceptions
from google.cloud import aiplatform_v1
from google.protobuf import field_mask_pb2

import trainpool.emulator as emulator
from trainpool import config
from trainpool.emulator.records.database import Database
from trainpool.emulator.state import CLOCK_OFFSET
from trainpool.emulator_client import advance_clock
from trainpool.emulator_client.messages import AdvanceClockResponse
from trainpool.home import Home
from trainpool.vertex import clients
from trainpool.vertex.pipelines import Target, build_pipeline_job, build_schedule

pytestmark = pytest.mark.timeout(180)

TARGET = Target("demo-project", "us-central1", "gs://demo-bucket/root")
PARENT = TARGET.parent
BASE = datetime(2040, 1, 1, tzinfo=timezone.utc)
"""Every test starts at this time (a Sunday), so the fire times are exact."""
State = aiplatform_v1.Schedule.State
HOUR, MINUTE = timedelta(hours=1), timedelta(minutes=1)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_fixture("tiny", tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def emu(emu: emulator.Emulator) -> emulator.Emulator:
    """The shared ``emu`` (tests/conftest.py), its clock at :data:`BASE`."""
    advance_clock(emu.address, to=BASE)
    return emu


def client() -> Any:
    return clients.schedule_client("us-central1")


def create(tiny: Path, cron: str, pause: float = 0.0, **fields: Any) -> Any:
    """A schedule of the tiny pipeline (``pause``: how long each run lasts, at least)."""
    _, job = build_pipeline_job(tiny, TARGET, {"pause": pause})
    schedule = build_schedule(job, TARGET, cron, "nightly")
    schedule.max_concurrent_active_run_count = 0  # unset unless a test sets it
    for key, value in fields.items():
        setattr(schedule, key, value)
    return client().create_schedule(parent=PARENT, schedule=schedule)


def advance(
    emu: emulator.Emulator, by: timedelta = timedelta(0), to: datetime | None = None
) -> AdvanceClockResponse:
    """Advance over gRPC (``to``, else ``by``), without waiting for the runs."""
    if to is not None:
        return advance_clock(emu.address, to=to)
    return advance_clock(emu.address, by=by)


def settle(emu: emulator.Emulator) -> None:
    """Wait until every schedule's runs have ended and none is queued."""
    done = advance_clock(emu.address, by=timedelta(0), wait_for_runs=True, wait_timeout_s=90)
    assert done.idle


def runs(schedule: Any) -> list[Any]:
    """The schedule's PipelineJobs, oldest first, with the filter the SDK's list_jobs sends."""
    request = {"parent": PARENT, "filter": f"schedule_name={schedule.name}"}
    listed = clients.pipeline_client("us-central1").list_pipeline_jobs(request=request)
    return sorted(listed, key=lambda job: job.create_time)


def near(value: datetime, expected: datetime) -> bool:
    """``value`` is ``expected`` plus the few real seconds a test takes."""
    return expected <= value < expected + timedelta(seconds=20)


def stamp(job: Any) -> str:
    """The fire time in a scheduled run's id (``tiny-YYYYMMDDHHMMSS-<schedule id>``)."""
    return str(job.name.rsplit("/", 1)[-1].split("-")[1])


def test_runs_fire_at_the_cron_times_of_its_zone_with_schedule_name_set(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """cron: "To explicitly set a timezone to the cron tab, apply a prefix in the cron tab:
    "CRON_TZ=${IANA_TIME_ZONE}" or "TZ=${IANA_TIME_ZONE}"." next_run_time: "Timestamp when
    this Schedule should schedule the next run." PipelineJob.schedule_name: "The schedule
    resource name. Only returned if the Pipeline is created by Schedule API." """
    schedule = create(tiny, "TZ=America/New_York 0 3 * * *")
    three_am_new_york = BASE + timedelta(hours=8)  # 03:00 EST is 08:00 UTC
    assert schedule.state == State.ACTIVE
    assert schedule.next_run_time == three_am_new_york
    assert schedule.start_time == schedule.create_time, "start_time: Default to create time"
    assert near(schedule.create_time, BASE)
    advance(emu, to=three_am_new_york - MINUTE)
    assert runs(schedule) == []
    for night in range(2):
        advance(emu, by=timedelta(days=1) if night else MINUTE)
        settle(emu)
    found = runs(schedule)
    assert [stamp(job) for job in found] == ["20400101080000", "20400102080000"]
    for night, job in enumerate(found):
        assert job.schedule_name == schedule.name
        assert job.state.name == "PIPELINE_STATE_SUCCEEDED", job.error.message
        fired = three_am_new_york + timedelta(days=night)
        assert near(job.create_time, fired), "created when due"
    stored = client().get_schedule(name=schedule.name)
    assert stored.started_run_count == 2
    assert stored.next_run_time == three_am_new_york + timedelta(days=2)
    last = stored.last_scheduled_run_response
    assert last.scheduled_run_time == three_am_new_york + timedelta(days=1)
    assert last.run_response == found[1].name
    quoted = {"parent": PARENT, "filter": f'schedule_name="{schedule.name}" AND state!=X'}
    listed = clients.pipeline_client("us-central1").list_pipeline_jobs(request=quoted)
    assert sorted(job.name for job in listed) == sorted(job.name for job in found)


def test_no_run_before_start_time_nor_after_end_time_then_completed(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """start_time: "Timestamp after which the first run can be scheduled." end_time:
    "Timestamp after which no new runs can be scheduled. If specified, The schedule will be
    completed when either end_time is reached or ..." COMPLETED: "No new runs will be
    scheduled." """
    schedule = create(tiny, "0 * * * *", start_time=BASE + 2.5 * HOUR, end_time=BASE + 5 * HOUR)
    assert schedule.next_run_time == BASE + 3 * HOUR
    advance(emu, to=BASE + 2.9 * HOUR)
    assert runs(schedule) == []
    for hour in (3, 4, 5):
        advance(emu, to=BASE + hour * HOUR)
        settle(emu)
    stored = client().get_schedule(name=schedule.name)
    assert stored.state == State.COMPLETED
    assert not aiplatform_v1.Schedule.pb(stored).HasField("next_run_time")
    advance(emu, by=3 * HOUR)
    settle(emu)
    assert [stamp(job) for job in runs(schedule)] == [
        "20400101030000",
        "20400101040000",
        "20400101050000",
    ]


def test_max_run_count_completes_the_schedule_when_its_last_run_starts(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """max_run_count: "The schedule will be completed when either started_run_count >=
    max_run_count or when end_time is reached." started_run_count: "The number of runs
    started by this schedule." COMPLETED: "Already started runs will be allowed to
    complete." """
    schedule = create(tiny, "*/10 * * * *", pause=3.0, max_run_count=2)
    advance(emu, by=10 * MINUTE)
    settle(emu)
    assert client().get_schedule(name=schedule.name).state == State.ACTIVE
    advance(emu, by=10 * MINUTE)
    stored = client().get_schedule(name=schedule.name)
    assert (stored.state, stored.started_run_count) == (State.COMPLETED, 2)
    assert runs(schedule)[-1].state.name in ("PIPELINE_STATE_QUEUED", "PIPELINE_STATE_RUNNING")
    settle(emu)
    advance(emu, by=HOUR)
    settle(emu)
    found = runs(schedule)
    assert [job.state.name for job in found] == ["PIPELINE_STATE_SUCCEEDED"] * 2


def test_without_queueing_a_run_due_while_one_is_active_is_skipped(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """max_concurrent_active_run_count: "the maximum number of active runs that can be
    executed concurrently for this Schedule. This limits the number of runs that can be in
    a non-terminal state at the same time." allow_queueing: "Whether new scheduled runs can
    be queued when max_concurrent_runs limit is reached. If set to true, new runs will be
    queued instead of skipped. Default to false." last_scheduled_run_response: "Response of
    the last scheduled run." """
    schedule = create(tiny, "*/10 * * * *", pause=4.0, max_concurrent_active_run_count=1)
    done = advance(emu, by=20 * MINUTE)  # the 00:10 run is still going at 00:20
    assert len(done.started) == 1
    skipped = "run of 2040-01-01T00:20:00Z skipped: max_concurrent_active_run_count 1 reached"
    assert any(skipped in event for event in done.events), done.events
    stored = client().get_schedule(name=schedule.name)
    last = stored.last_scheduled_run_response
    assert last.scheduled_run_time == BASE + 20 * MINUTE
    assert last.run_response == (
        "skipped: max_concurrent_active_run_count 1 reached (1 run(s) active)"
    )
    assert stored.started_run_count == 1
    settle(emu)
    assert [stamp(job) for job in runs(schedule)] == ["20400101001000"]


def test_with_queueing_the_run_waits_and_starts_when_the_active_one_ends(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """allow_queueing: "If set to true, new runs will be queued instead of skipped." The
    queued run keeps its scheduled_run_time ("The scheduled run time based on the
    user-specified schedule") and starts once the active run has ended."""
    schedule = create(
        tiny, "*/10 * * * *", pause=4.0, max_concurrent_active_run_count=1, allow_queueing=True
    )
    advance(emu, by=20 * MINUTE)
    last = client().get_schedule(name=schedule.name).last_scheduled_run_response
    assert last.run_response.startswith("queued: max_concurrent_active_run_count 1 reached")
    assert len(runs(schedule)) == 1
    settle(emu)
    first, second = runs(schedule)
    assert [stamp(first), stamp(second)] == ["20400101001000", "20400101002000"]
    assert second.create_time >= first.end_time, "started when the slot freed"
    stored = client().get_schedule(name=schedule.name)
    assert stored.started_run_count == 2
    assert stored.last_scheduled_run_response.scheduled_run_time == BASE + 20 * MINUTE
    assert stored.last_scheduled_run_response.run_response == second.name


def test_max_concurrent_run_count_limits_starts_not_executing_runs(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """max_concurrent_run_count: "Maximum number of runs that can be started concurrently
    for this Schedule. This is the limit for starting the scheduled requests and not the
    execution of the operations/jobs created by the requests (if applicable)." So with it
    at 1 and no max_concurrent_active_run_count, a long run does not stop the next."""
    schedule = create(tiny, "*/10 * * * *", pause=4.0, max_concurrent_run_count=1)
    done = advance(emu, by=20 * MINUTE)
    assert len(done.started) == 2
    states = {job.state.name for job in runs(schedule)}
    assert states <= {"PIPELINE_STATE_QUEUED", "PIPELINE_STATE_RUNNING"}, "both executing"
    settle(emu)


def test_pause_stops_new_runs_and_resume_without_catch_up_skips_the_missed_ones(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """PAUSED: "No new runs will be created until the schedule is resumed." ResumeSchedule:
    "new runs will be scheduled starting from the next execution time after the current
    time"; catch_up: "Default to false." Only an ACTIVE schedule pauses; "Only paused
    Schedule can be resumed." """
    schedule = create(tiny, "0 * * * *")
    client().pause_schedule(name=schedule.name)
    paused = client().get_schedule(name=schedule.name)
    assert paused.state == State.PAUSED and near(paused.last_pause_time, BASE)
    with pytest.raises(exceptions.FailedPrecondition, match="accepted: an ACTIVE schedule"):
        client().pause_schedule(name=schedule.name)
    advance(emu, to=BASE + 3.5 * HOUR)
    assert runs(schedule) == []
    client().resume_schedule(name=schedule.name)
    resumed = client().get_schedule(name=schedule.name)
    assert resumed.state == State.ACTIVE and not resumed.catch_up
    assert near(resumed.last_resume_time, BASE + 3.5 * HOUR)
    assert resumed.next_run_time == BASE + 4 * HOUR
    with pytest.raises(exceptions.FailedPrecondition, match="accepted: a PAUSED schedule"):
        client().resume_schedule(name=schedule.name)
    settle(emu)
    assert runs(schedule) == [], "the 01:00, 02:00 and 03:00 runs were skipped"


def test_resume_with_catch_up_backfills_every_missed_run_first(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """catch_up: "Whether to backfill missed runs when the schedule is resumed from PAUSED
    state. If set to true, all missed runs will be scheduled. New runs will be scheduled
    after the backfill is complete. This will also update Schedule.catch_up field." With one
    active run at a time, the missed runs start one after another."""
    schedule = create(tiny, "0 * * * *", max_concurrent_active_run_count=1)
    client().pause_schedule(name=schedule.name)
    advance(emu, to=BASE + 3.5 * HOUR)
    client().resume_schedule(request={"name": schedule.name, "catch_up": True})
    assert client().get_schedule(name=schedule.name).catch_up
    settle(emu)
    backfilled = runs(schedule)
    assert [stamp(job) for job in backfilled] == [
        "20400101010000",
        "20400101020000",
        "20400101030000",
    ]
    for earlier, later in zip(backfilled, backfilled[1:], strict=False):
        assert later.create_time >= earlier.end_time
    advance(emu, to=BASE + 4 * HOUR)
    settle(emu)
    assert stamp(runs(schedule)[-1]) == "20400101040000"
    assert client().get_schedule(name=schedule.name).started_run_count == 4


def test_update_reschedules_from_the_update_time_and_skips_unstarted_runs(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """UpdateSchedule: "Updates an active or paused Schedule. When the Schedule is updated,
    new runs will be scheduled starting from the updated next execution time after the
    update time ... All unstarted runs before the update time will be skipped while already
    created runs will NOT be paused or canceled." update_mask: "The non-empty fields cannot
    be unset. The output_only fields will be ignored if specified." """
    schedule = create(
        tiny, "*/10 * * * *", pause=4.0, max_concurrent_active_run_count=1, allow_queueing=True
    )
    advance(emu, by=20 * MINUTE)  # 00:10 runs, 00:20 waits in the queue
    change = aiplatform_v1.Schedule(
        name=schedule.name, cron="45 * * * *", state=State.PAUSED, started_run_count=99
    )
    mask = field_mask_pb2.FieldMask(paths=["cron", "state", "started_run_count"])
    updated = client().update_schedule(schedule=change, update_mask=mask)
    assert updated.cron == "45 * * * *"
    assert updated.state == State.ACTIVE and updated.started_run_count == 1, "output-only"
    assert updated.next_run_time == BASE + 45 * MINUTE
    assert BASE + 20 * MINUTE <= updated.update_time <= emu.clock.now()
    assert updated.display_name == "nightly"
    settle(emu)
    assert [stamp(job) for job in runs(schedule)] == ["20400101001000"], "00:20 was skipped"
    with pytest.raises(exceptions.InvalidArgument, match="'nope' cannot be updated"):
        client().update_schedule(schedule=change, update_mask={"paths": ["nope"]})
    blank = aiplatform_v1.Schedule(name=schedule.name, display_name="")
    with pytest.raises(exceptions.InvalidArgument, match="schedule.display_name: would be"):
        client().update_schedule(schedule=blank, update_mask={"paths": ["display_name"]})
    limited = aiplatform_v1.Schedule(name=schedule.name, max_run_count=1)
    client().update_schedule(schedule=limited, update_mask={"paths": ["max_run_count"]})
    advance(emu, by=timedelta(0))
    assert client().get_schedule(name=schedule.name).state == State.COMPLETED
    with pytest.raises(exceptions.FailedPrecondition, match="it is COMPLETED"):
        client().update_schedule(schedule=change, update_mask={"paths": ["cron"]})


def test_delete_stops_the_schedule_and_leaves_the_runs_it_started(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """DeleteSchedule: "Deletes a Schedule." (a long-running operation); the runs it created
    go on (as a pause leaves them: "Already started runs will be allowed to complete")."""
    schedule = create(tiny, "*/10 * * * *", pause=2.0)
    [started] = advance(emu, by=10 * MINUTE).started
    client().delete_schedule(name=schedule.name).result()
    with pytest.raises(exceptions.NotFound):
        client().get_schedule(name=schedule.name)
    advance(emu, by=HOUR)
    settle(emu)
    [job] = runs(schedule)
    assert job.name == started and job.state.name == "PIPELINE_STATE_SUCCEEDED"


def test_bad_schedules_are_refused_and_nothing_is_created(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """create_pipeline_job_request: "User-specified ID is not supported in the request
    template."; end_time before start_time runs nothing."""
    _, job = build_pipeline_job(tiny, TARGET, {})
    with_id = build_schedule(job, TARGET, "0 3 * * *", "x")
    with_id.create_pipeline_job_request.pipeline_job_id = "mine"
    with pytest.raises(exceptions.InvalidArgument, match="pipeline_job_id: 'mine'"):
        client().create_schedule(parent=PARENT, schedule=with_id)
    backwards = build_schedule(job, TARGET, "0 3 * * *", "x")
    backwards.start_time, backwards.end_time = BASE + HOUR, BASE
    with pytest.raises(exceptions.InvalidArgument, match="schedule.end_time: .* before start"):
        client().create_schedule(parent=PARENT, schedule=backwards)
    assert list(client().list_schedules(parent=PARENT)) == []


def test_fire_times_missed_while_no_emulator_ran_are_skipped(
    tiny: Path, emu: emulator.Emulator
) -> None:
    """The emulator's own rule (Vertex never stops): a restarted emulator does not start a
    burst of runs for the time it was down; the schedule's log says how many it skipped."""
    schedule = create(tiny, "0 * * * *")
    root, offset = emu.root, emu.clock.offset_s
    emu.close()
    db = Database(Home(root).database)
    db.set_setting(CLOCK_OFFSET, repr(offset + 3.5 * 3600))  # 3.5 h pass while it is down
    db.close()
    with emulator.start(root) as again:
        os.environ[config.EMULATOR_ENV] = again.address
        stored = client().get_schedule(name=schedule.name)
        assert stored.next_run_time == BASE + 4 * HOUR
        assert runs(schedule) == []
    log = Home(root).schedule_log(schedule.name.rsplit("/", 1)[-1]).read_text()
    assert "3 run(s) from 2040-01-01T01:00:00Z skipped: the emulator was not running" in log
