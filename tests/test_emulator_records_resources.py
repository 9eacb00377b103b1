"""Every resource in one table: insert, get, update, delete, and pages filtered in SQL."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import schedule as sc
from google.cloud.aiplatform_v1.types.job_state import JobState

from trainpool.emulator.records.database import Database
from trainpool.emulator.records.kinds import CUSTOM_JOBS, SCHEDULES, kind_of
from trainpool.emulator.records.resources import AlreadyExists, Records
from trainpool.errors import InputError

PARENT = "projects/p/locations/us-central1"


@pytest.fixture
def records(tmp_path: Path) -> Records:
    return Records(Database(tmp_path / "db.sqlite"))


def job(i: int, **labels: str) -> cj.CustomJob:
    return cj.CustomJob(
        name=f"{PARENT}/customJobs/{i}",
        display_name=f"job-{i % 3}",
        state=JobState.JOB_STATE_QUEUED,
        labels=labels,
    )


def test_a_record_comes_back_whole_and_updates_stamp_it(records: Records) -> None:
    stored = records.insert(CUSTOM_JOBS, PARENT, job(1, team="ml"))
    found = records.get(CUSTOM_JOBS, stored.name)
    assert found == stored
    changed = records.update(
        CUSTOM_JOBS, stored.name, lambda j: setattr(j, "state", JobState.JOB_STATE_RUNNING)
    )
    assert changed.state == JobState.JOB_STATE_RUNNING and changed.update_time
    assert records.get(CUSTOM_JOBS, stored.name) == changed
    assert records.get(SCHEDULES, stored.name) is None, "a name is found under its own kind only"
    with pytest.raises(AlreadyExists):
        records.insert(CUSTOM_JOBS, PARENT, job(1))
    assert records.delete(CUSTOM_JOBS, stored.name)
    assert records.get(CUSTOM_JOBS, stored.name) is None and not records.delete(
        CUSTOM_JOBS, stored.name
    )


def test_pages_follow_creation_order_and_filters(records: Records) -> None:
    for i in range(10):
        records.insert(CUSTOM_JOBS, PARENT, job(i, run="a" if i % 2 else "b"))
    records.insert(CUSTOM_JOBS, "projects/q/locations/us-central1", job(99))
    seen, token = [], ""
    while True:
        page, token = records.page(CUSTOM_JOBS, PARENT, page_size=3, page_token=token)
        seen += [j.name.rsplit("/", 1)[1] for j in page]
        if not token:
            break
    assert seen == [str(i) for i in range(10)]
    odd, _ = records.page(CUSTOM_JOBS, PARENT, filter='labels.run="a"')
    assert [j.name.rsplit("/", 1)[1] for j in odd] == ["1", "3", "5", "7", "9"]
    named, _ = records.page(CUSTOM_JOBS, PARENT, filter='display_name="job-0" AND labels.run="b"')
    assert [j.name.rsplit("/", 1)[1] for j in named] == ["0", "6"]
    records.update(CUSTOM_JOBS, f"{PARENT}/customJobs/3", lambda j: j.labels.update(run="b"))
    moved, _ = records.page(CUSTOM_JOBS, PARENT, filter='labels.run="a"')
    assert "3" not in [j.name.rsplit("/", 1)[1] for j in moved], "labels follow an update"
    running, _ = records.page(CUSTOM_JOBS, PARENT, filter="state=JOB_STATE_RUNNING")
    assert running == []


def test_schedules_filter_by_their_own_state_enum(records: Records) -> None:
    active = sc.Schedule(name=f"{PARENT}/schedules/1", state=sc.Schedule.State.ACTIVE)
    paused = sc.Schedule(name=f"{PARENT}/schedules/2", state=sc.Schedule.State.PAUSED)
    for schedule in (active, paused):
        records.insert(SCHEDULES, PARENT, schedule)
    found, _ = records.page(SCHEDULES, PARENT, filter="state=PAUSED")
    assert [s.name for s in found] == [paused.name]
    assert records.names(SCHEDULES, not_states=[sc.Schedule.State.PAUSED]) == [active.name]
    assert kind_of(paused.name) is SCHEDULES


@pytest.mark.parametrize(
    ("filter_", "token", "field"),
    [("labels.x ~ 1", "", "filter"), ("", "not-a-token", "page_token")],
)
def test_bad_filters_and_tokens_name_their_field(
    records: Records, filter_: str, token: str, field: str
) -> None:
    with pytest.raises(InputError) as caught:
        records.page(CUSTOM_JOBS, PARENT, filter=filter_, page_token=token)
    assert caught.value.problems[0].field == field


def test_writes_from_many_threads_at_once_lose_nothing(records: Records) -> None:
    """Inserts, updates and deletes from 8 threads at once (as the gRPC workers and the
    job engine's threads make them): every record and label is as the last write left
    it, and a deleted record leaves no label behind."""
    errors: list[BaseException] = []

    def worker(w: int) -> None:
        try:
            for i in range(40):
                name = records.insert(CUSTOM_JOBS, PARENT, job(w * 100 + i, team=f"t{w}")).name
                records.update(
                    CUSTOM_JOBS, name, lambda j: setattr(j, "state", JobState.JOB_STATE_RUNNING)
                )
                if i % 4 == 0:
                    assert records.delete(CUSTOM_JOBS, name)
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for w in range(8):
        found, _ = records.page(CUSTOM_JOBS, PARENT, filter=f"labels.team=t{w}", page_size=100)
        assert sorted(int(j.name.rsplit("/", 1)[1]) for j in found) == [
            w * 100 + i for i in range(40) if i % 4
        ]
        assert {j.state for j in found} == {JobState.JOB_STATE_RUNNING}
    left = records.db.read("SELECT COUNT(*) AS n FROM resource_labels")[0]["n"]
    assert left == 8 * 30, "a deleted record's labels went with it"


def test_a_store_kept_before_a_kind_indexed_its_times_is_indexed_again(tmp_path: Path) -> None:
    from google.cloud.aiplatform_v1.types import pipeline_job as pj

    from trainpool.emulator.records.kinds import PIPELINE_JOBS
    from trainpool.emulator.records.migrate import reindex

    records = Records(Database(tmp_path / "db.sqlite"))
    job = pj.PipelineJob(name="projects/p/locations/us-central1/pipelineJobs/a")
    job.create_time = records.clock.now()
    records.insert(PIPELINE_JOBS, "projects/p/locations/us-central1", job)
    with records.db.transaction() as conn:  # as an earlier emulator left it
        conn.execute("DELETE FROM resource_fields")
    parent = "projects/p/locations/us-central1"
    assert records.page(PIPELINE_JOBS, parent, filter='create_time>"2000-01-01T00:00:00Z"')[0] == []
    assert reindex(records, PIPELINE_JOBS) == 1
    found, _ = records.page(PIPELINE_JOBS, parent, filter='create_time>"2000-01-01T00:00:00Z"')
    assert [j.name for j in found] == [job.name]
    assert reindex(records, PIPELINE_JOBS) == 0
