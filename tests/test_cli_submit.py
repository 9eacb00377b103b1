"""`trainpool submit` against the emulator over real gRPC: runs, schedules, refusals."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.pipelines import compile_fixture
from google.protobuf import json_format
from typer.testing import CliRunner

import trainpool.emulator as emulator
from trainpool import config
from trainpool.cli import app
from trainpool.vertex import clients

pytestmark = pytest.mark.timeout(120)

PIPELINE = Path(__file__).resolve().parents[1] / "pipelines" / "distributed_training.yaml"
PARENT = "projects/demo-project/locations/us-central1"
TARGET = ["--project", "demo-project", "--location", "us-central1"]
TARGET += ["--pipeline-root", "gs://demo-bucket/root"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_fixture("tiny", tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An emulator on ``tmp_path``, whose local store has the pipeline root's bucket."""
    (tmp_path / "gcs" / "demo-bucket").mkdir(parents=True)
    with emulator.start(tmp_path) as running:
        monkeypatch.setenv(config.EMULATOR_ENV, running.address)
        monkeypatch.setenv(config.HOME_ENV, str(tmp_path))
        yield


def submit(*args: str) -> object:
    return CliRunner().invoke(app, ["submit", *args])


def parameter_values(job: object) -> dict[str, object]:
    message = type(job).pb(job)  # type: ignore[attr-defined]
    return json_format.MessageToDict(message.runtime_config)["parameterValues"]


def test_submit_creates_one_run_with_the_parameters(tiny: Path, emu: None) -> None:
    result = submit(str(tiny), *TARGET, "--param", "a=4", "--param", 'config={"w": 1}')
    assert result.exit_code == 0, result.stderr
    jobs = list(clients.pipeline_client("us-central1").list_pipeline_jobs(parent=PARENT))
    assert len(jobs) == 1
    job_id = jobs[0].name.rsplit("/", 1)[1]
    assert result.stdout == (
        f"submitted {jobs[0].name} (PIPELINE_STATE_RUNNING)\n"
        "https://console.cloud.google.com/vertex-ai/locations/us-central1/pipelines/runs/"
        f"{job_id}?project=demo-project\n"
    )
    assert parameter_values(jobs[0]) == {"a": 4, "config": {"w": 1}}


def test_schedule_is_created_then_replaced(tiny: Path, emu: None) -> None:
    args = [str(tiny), *TARGET, "--schedule", "30 2 * * 1", "--timezone", "America/New_York"]
    args += ["--service-account", "sa@demo-project.iam.gserviceaccount.com"]
    first = submit(*args, "--param", "b=3")
    assert first.exit_code == 0, first.stderr
    assert first.stdout == (
        f"schedule {PARENT}/schedules/1000 (TZ=America/New_York 30 2 * * 1, max 1 active run; "
        "a run due while one is active is skipped)\n"
    )
    second = submit(*args, "--param", "b=4", "--allow-queueing")
    assert second.exit_code == 0, second.stderr
    assert second.stdout == (
        f"schedule {PARENT}/schedules/1001 (TZ=America/New_York 30 2 * * 1, max 1 active run; "
        "a run due while one is active is queued)\n"
        f"replaced {PARENT}/schedules/1000\n"
    )
    left = list(clients.schedule_client("us-central1").list_schedules(parent=PARENT))
    assert [(s.name, s.display_name) for s in left] == [(f"{PARENT}/schedules/1001", "tiny")]
    assert (left[0].max_concurrent_active_run_count, left[0].allow_queueing) == (1, True)
    embedded = left[0].create_pipeline_job_request.pipeline_job
    assert parameter_values(embedded) == {"b": 4}
    assert embedded.service_account == "sa@demo-project.iam.gserviceaccount.com"
    assert list(clients.pipeline_client("us-central1").list_pipeline_jobs(parent=PARENT)) == []


def test_bad_input_names_every_problem_and_creates_nothing(tiny: Path, emu: None) -> None:
    result = submit(
        str(tiny),
        "--project", "demo-project", "--location", "us-central1",
        "--pipeline-root", "bucket/root",
        "--param", "a=two", "--param", "worker=2",
        "--schedule", "0 3 * *", "--timezone", "Nowhere/Land",
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "--pipeline-root: 'bucket/root'; accepted: gs://BUCKET or gs://BUCKET/PATH",
        "--param a=two: a is NUMBER_INTEGER; accepted: a whole number such as 3",
        "--param worker: the pipeline has no such parameter; accepted: "
        "a, b, config, fail, label, pause, ratio, tags, verbose",
        "--schedule: '0 3 * *' is not a cron expression; accepted: five fields "
        "'MIN HOUR DAY MONTH WEEKDAY' such as '0 3 * * *'",
        "--timezone: time zone 'Nowhere/Land' is unknown; accepted: an IANA time zone "
        "such as America/New_York or UTC",
    ]
    assert list(clients.pipeline_client("us-central1").list_pipeline_jobs(parent=PARENT)) == []
    assert list(clients.schedule_client("us-central1").list_schedules(parent=PARENT)) == []


def test_timezone_needs_a_schedule(tiny: Path) -> None:
    result = submit(str(tiny), *TARGET, "--timezone", "UTC")
    assert result.exit_code == 2
    assert result.stderr == (
        "--timezone: 'UTC' without --schedule; accepted: --timezone with --schedule\n"
    )


def test_missing_pipeline_file(tmp_path: Path) -> None:
    result = submit(str(tmp_path / "absent.yaml"), *TARGET)
    assert result.exit_code == 2
    assert result.stderr.startswith("PIPELINE: ")
    assert "cannot be read (No such file or directory)" in result.stderr


class Registry(http.server.BaseHTTPRequestHandler):
    """A loopback registry speaking the one call of the Docker Registry API v2 that
    `trainpool submit` makes: HEAD /v2/<name>/manifests/<reference>."""

    known = {"/v2/team/components/manifests/sha256:" + "a" * 64}

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200 if self.path in self.known else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def registry() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def nothing_created() -> bool:
    listed = clients.pipeline_client("us-central1").list_pipeline_jobs(parent=PARENT)
    return list(listed) == []


def test_a_missing_bucket_is_refused_and_nothing_created(tiny: Path, emu: None) -> None:
    args = ["--project", "demo-project", "--location", "us-central1"]
    result = submit(str(tiny), *args, "--pipeline-root", "gs://no-such-bucket/root")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "--pipeline-root: 'gs://no-such-bucket/root': the bucket does not exist; accepted: "
        "a bucket you created (trainpool does not create it)"
    ]
    assert nothing_created()


def test_an_image_its_registry_lacks_is_refused_and_nothing_created(
    tiny: Path, emu: None, registry: str, tmp_path: Path
) -> None:
    missing, present = (
        f"{registry}/team/components@sha256:{'b' * 64}",
        f"{registry}/team/components@sha256:{'a' * 64}",
    )
    for image in (missing, present):
        (tmp_path / "p.yaml").write_text(tiny.read_text().replace("python:3.11", image))
        result = submit(str(tmp_path / "p.yaml"), *TARGET)
        if image == missing:
            assert result.exit_code == 2
            assert (
                f"components image '{missing}': the registry has no such manifest" in result.stderr
            )
            assert nothing_created()
    assert result.exit_code == 0, result.stderr  # the image the registry has goes through


def test_a_request_that_does_not_plan_is_refused_and_nothing_created(emu: None) -> None:
    request = '{"primary": {"machine_type": "n1-standrd-4"}}'
    result = submit(str(PIPELINE), *TARGET, "--param", f"cluster_request={request}")
    assert result.exit_code == 2
    assert result.stderr.startswith("--param cluster_request: primary.machine_type: 'n1-standrd-4'")
    assert nothing_created()


def test_a_hostile_gate_alias_is_refused_before_anything_trains(emu: None) -> None:
    result = submit(
        str(PIPELINE), *TARGET, "--param", "gate_alias=default", "--param", "gate_goal=lowest"
    )
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert any(
        line.startswith("--param gate_alias: 'default' is not an alias the gate may move")
        and "[a-z][a-zA-Z0-9-]{0,126}[a-z0-9]" in line
        for line in lines
    ), result.stderr
    assert any(line.startswith("--param gate_goal: 'lowest'") for line in lines), result.stderr
    assert nothing_created()
