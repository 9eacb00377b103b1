"""Pipelines of Google Cloud Pipeline Components run locally, by GCPC's own launchers.

kfp.local alone runs none of them (kubeflow/pipelines#10915): its resolver fails on
Vertex's placeholders and its runner refuses container components. Each pipeline below is
compiled from the installed GCPC, unchanged, and run with ``run_local`` against the
emulator; each job shows the pools GCPC asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.host_image import host_image
from fixtures.pipelines import compile_fixture

import trainpool.emulator as emulator
from trainpool.emulated.pipeline_run import run_local
from trainpool.errors import InputError
from trainpool.kfp_local import containers
from trainpool.vertex.clients import job_client, model_client

pytestmark = pytest.mark.timeout(240)
PARENT = "projects/local-project/locations/us-central1"


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path_factory.mktemp("gcpc") / "root", storage=True) as running:
        host_image(running.root)
        yield running


@pytest.fixture
def served(emu: emulator.Emulator, monkeypatch: pytest.MonkeyPatch) -> emulator.Emulator:
    monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", emu.storage_address or "")
    return emu


def run(name: str, tmp_path: Path, **params: object) -> object:
    result = run_local(compile_fixture(name, tmp_path), params)
    assert result.state == "SUCCEEDED", (result.error, [t.tail for t in result.tasks])
    return result


def test_custom_training_job_op_makes_the_job_gcpc_asked_for(
    served: object, tmp_path: Path
) -> None:
    result = run("gcpc_custom_job", tmp_path, display_name="gcpc-two-pools")
    [view] = result.jobs  # type: ignore[attr-defined]
    job = job_client("us-central1").get_custom_job(name=view.name)
    assert job.display_name == "gcpc-two-pools"
    assert [p.replica_count for p in job.job_spec.worker_pool_specs] == [1, 2]
    assert job.state.name == "JOB_STATE_SUCCEEDED"
    assert job.labels["trainpool-local-run"], "GCPC merged the run's labels into its job"


def test_a_job_from_a_component_runs_it_on_every_replica_and_returns_its_outputs(
    served: object, tmp_path: Path
) -> None:
    result = run("gcpc_from_component", tmp_path, lr=0.25)
    [view] = result.jobs  # type: ignore[attr-defined]
    job = job_client("us-central1").get_custom_job(name=view.name)
    assert [p.replica_count for p in job.job_spec.worker_pool_specs] == [1, 2]
    assert sorted(view.replicas) == ["workerpool0-0", "workerpool1-0", "workerpool1-1"]
    transcript = result.transcript.read_text()  # type: ignore[attr-defined]
    assert "trained lr=0.25 on" in transcript, "the component's output came back to its task"


def test_hyperparameter_tuning_job_op_with_gcpc_serializers(served: object, tmp_path: Path) -> None:
    result = run("gcpc_sweep", tmp_path)
    [view] = result.jobs  # type: ignore[attr-defined]
    sweep = job_client("us-central1").get_hyperparameter_tuning_job(name=view.name)
    assert sweep.state.name == "JOB_STATE_SUCCEEDED" and len(sweep.trials) == 3
    units = {int(p.value) for t in sweep.trials for p in t.parameters if p.parameter_id == "units"}
    assert units <= set(range(4, 9)) and sweep.max_trial_count == 3


def test_model_upload_and_get_ops(served: emulator.Emulator, tmp_path: Path) -> None:
    run("gcpc_model", tmp_path, artifact_uri="gs://gcpc-fixture/model-a")
    models = list(model_client("us-central1").list_models(parent=PARENT))
    uploaded = [m for m in models if m.artifact_uri == "gs://gcpc-fixture/model-a"]
    assert uploaded and uploaded[0].display_name == "gcpc-model"
    run("gcpc_model_get", tmp_path, model_name=uploaded[0].name.rsplit("/", 1)[1])


def test_model_upload_op_with_parent_model_adds_a_version(
    served: emulator.Emulator, tmp_path: Path
) -> None:
    run("gcpc_model_version", tmp_path, artifact_uri="gs://gcpc-fixture/model-v")
    client = model_client("us-central1")
    [model] = [m for m in client.list_models(parent=PARENT) if m.display_name == "gcpc-versioned"]
    versions = {
        v.version_id: list(v.version_aliases) for v in client.list_model_versions(name=model.name)
    }
    assert versions == {"1": ["default"], "2": ["challenger"]}
    assert client.get_model(name=f"{model.name}@challenger").version_id == "2"


def test_a_container_component_that_cannot_run_locally_is_refused_before_anything_runs(
    served: emulator.Emulator, tmp_path: Path
) -> None:
    before = list(job_client("us-central1").list_custom_jobs(parent=PARENT))
    runs = (
        sorted((served.root / "local-runs").glob("*"))
        if (served.root / "local-runs").exists()
        else []
    )
    with pytest.raises(InputError) as caught:
        run_local(compile_fixture("gcpc_unrunnable", tmp_path), {})
    assert str(caught.value).startswith("task echo-image: image 'alpine:3': a container component")
    assert list(job_client("us-central1").list_custom_jobs(parent=PARENT)) == before
    assert sorted((served.root / "local-runs").glob("*")) == runs, "no run folder was made"


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        (["sh", "-c", "python3 -m kfp.dsl.executor_main", "ephemeral_component.py"], "python"),
        (["python3", "-m", "kfp.dsl.executor_main", "--function_to_execute", "f"], ""),
        (
            [
                "python3",
                "-u",
                "-m",
                "google_cloud_pipeline_components.container.v1.custom_job.launcher",
            ],
            "launcher",
        ),
        (
            [
                "python3",
                "-m",
                "google_cloud_pipeline_components.container.v1.endpoint.create_endpoint.launcher",
            ],
            "",
        ),
        (
            [
                "python3",
                "-m",
                "google_cloud_pipeline_components.container.preview.custom_job.launcher",
            ],
            "",
        ),
        (["echo", "hello"], ""),
    ],
)
def test_what_runs_locally(command: list[str], kind: str) -> None:
    found, why = containers.verdict(command)
    assert found == kind and bool(why) == (not kind)


def test_integral_numbers_in_lists_and_structs_are_ints_as_vertex_writes_them() -> None:
    assert containers.integral([{"goal": 2.0, "lr": 0.5}, 3.0]) == [{"goal": 2, "lr": 0.5}, 3]


def test_a_python_path_in_a_tasks_input_reaches_it_unchanged(
    served: object, tmp_path: Path
) -> None:
    """kfp.local's ``replace_python_executable`` rewrote "python3" inside every argument, the
    executor input's JSON too (a job's ``/usr/bin/python3`` became ``/usr/bin//.../python``);
    a task's ``python3`` is now its own Python's, found on its PATH, and nothing is rewritten."""
    path = compile_fixture("echo_command", tmp_path)
    result = run_local(path, {})
    assert result.state == "SUCCEEDED", result.error
    assert result.outputs["Output"] == ["/usr/bin/python3", "-c", "x"]


def test_the_readmes_command_runs_a_gcpc_pipeline(served: object, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from trainpool.cli import app

    pipeline = compile_fixture("gcpc_custom_job", tmp_path)
    done = CliRunner().invoke(app, ["run", str(pipeline), "--local"])
    assert done.exit_code == 0, done.output
    assert "pipeline gcpc-custom-job SUCCEEDED" in done.output
    assert "CustomJob projects/local-project/locations/us-central1/customJobs/" in done.output


def test_a_users_own_kfp_local_task_runs_as_kfp_runs_it_after_trainpools_handler_is_installed(
    tmp_path: Path,
) -> None:
    """A notebook that imported trainpool (a local run swaps kfp.local's task handler once per
    process) still runs its own ``kfp.local`` tasks as kfp.local alone would."""
    from fixtures.pipelines.tiny import add
    from kfp import local

    containers.install()
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path))
    assert add(a=2, b=3).output == 5
