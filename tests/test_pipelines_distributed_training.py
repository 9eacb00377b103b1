"""The distributed-training pipeline: its compiled YAML, loaded from disk, run end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from pipelines.distributed_training import CLUSTER_KNOBS, SIZING_KNOBS
from trainpool import compiling, emulator
from trainpool.config import EMULATOR_ENV
from trainpool.emulated.pipeline_run import run_local
from trainpool.vertex.clients import job_client

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "pipelines" / "distributed_training.yaml"
EXAMPLE = str(ROOT / "examples" / "pytorch_ddp")
PARENT_LOCAL = "projects/local-project/locations/us-central1"
SMALL_REQUEST = {
    "primary": {"machine_type": "n1-standard-4"},
    "workers": {"replica_count": 2, "machine_type": "n1-standard-4"},
    "args": ["--epochs=1"],
    "base_output_directory": "gs://trainpool-test/out",
}

pytestmark = pytest.mark.timeout(240)


def local(root: Path, uri: str) -> Path:
    """Where ``gs://`` ``uri`` lives in the local store at ``root``."""
    from trainpool.cluster_env.gcs import to_path

    return Path(to_path(uri, root / "gcs"))


def _without_version_noise(text: str) -> str:
    text = re.sub(r"sdkVersion: kfp-[\w.]+", "sdkVersion: kfp", text)
    return re.sub(r"kfp==[\w.]+", "kfp", text)


def test_checked_in_yaml_matches_a_fresh_compile_apart_from_versions(tmp_path: Path) -> None:
    compiling.compile_to(ROOT, tmp_path)
    fresh = (tmp_path / "pipelines" / "distributed_training.yaml").read_text()
    assert _without_version_noise(fresh) == _without_version_noise(PIPELINE.read_text())


def test_compile_is_byte_identical_whatever_the_callers_hash_seed(tmp_path: Path) -> None:
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        code = "import sys; from pathlib import Path; from trainpool.compiling import compile_to;"
        code += " compile_to(Path(sys.argv[1]), Path(sys.argv[2]))"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run([sys.executable, "-c", code, str(ROOT), str(out)], env=env, check=True)
        outputs.append((out / "pipelines" / "distributed_training.yaml").read_bytes())
    assert outputs[0] == outputs[1]


def test_knobs_are_typed_parameters_and_training_tasks_never_cache() -> None:
    spec = yaml.safe_load(PIPELINE.read_text())
    inputs = spec["root"]["inputDefinitions"]["parameters"]
    assert inputs["worker_count"]["parameterType"] == "NUMBER_INTEGER"
    assert inputs["accelerator_count"]["parameterType"] == "NUMBER_INTEGER"
    assert inputs["max_trial_count"]["parameterType"] == "NUMBER_INTEGER"
    assert inputs["cluster_request"]["parameterType"] == "STRUCT"
    assert inputs["early_stopping"] == {
        "defaultValue": {},
        "isOptional": True,
        "parameterType": "STRUCT",
    }  # {}: the study's own early stopping
    caching = {}

    def walk(dag: dict) -> None:
        for name, task in dag.get("tasks", {}).items():
            caching[name] = task.get("cachingOptions", {}).get("enableCache", False)
        for component in spec["components"].values():
            if "dag" in component and component["dag"] is not dag:
                for name, task in component["dag"].get("tasks", {}).items():
                    caching[name] = task.get("cachingOptions", {}).get("enableCache", False)

    walk(spec["root"]["dag"])
    assert caching["hyperparameter-sweep"] is False
    assert caching["launch-custom-job"] is False
    assert caching["plan-cluster"] is True


def test_the_launched_spec_is_the_sized_one_and_each_knob_is_its_components() -> None:
    """plan → size → launch: the job launched (or swept) is size_reduction_server's spec,
    not the plan's; every knob has its component's type and default (declared once)."""
    spec = yaml.safe_load(PIPELINE.read_text())
    tasks: dict = {}
    for component in [spec["root"], *spec["components"].values()]:
        tasks.update(component.get("dag", {}).get("tasks", {}))
    for name in ("launch-custom-job", "hyperparameter-sweep"):
        given = tasks[name]["inputs"]["parameters"]["custom_job_spec"]
        producer = given.get("taskOutputParameter") or {}
        channel = given.get("componentInputParameter", "")
        assert producer.get("producerTask") == "size-reduction-server" or channel.startswith(
            "pipelinechannel--size-reduction-server-custom_job_spec"
        ), given
    sizing = tasks["size-reduction-server"]["inputs"]["parameters"]
    assert sizing["custom_job_spec"]["taskOutputParameter"]["producerTask"] == "plan-cluster"
    assert "triggerPolicy" not in tasks["size-reduction-server"]  # it always runs
    inputs = spec["root"]["inputDefinitions"]["parameters"]
    for component, knobs in (
        ("plan_cluster", CLUSTER_KNOBS),
        ("size_reduction_server", SIZING_KNOBS),
    ):
        own = yaml.safe_load((ROOT / "component_specs" / f"{component}.yaml").read_text())
        declared = own["root"]["inputDefinitions"]["parameters"]
        for knob in knobs:
            assert inputs[knob] == declared[knob], (component, knob)


@pytest.fixture
def own_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EMULATOR_ENV, raising=False)


def test_single_job_run_applies_the_flat_knobs(tmp_path: Path, own_emulator: None) -> None:
    result = run_local(
        PIPELINE,
        {
            "cluster_request": dict(SMALL_REQUEST, labels={"team": "ranking"}),
            "worker_count": 1,
            "max_trial_count": 0,
            "source_dir": EXAMPLE,
        },
        tmp_path,
    )
    assert result.state == "SUCCEEDED", result.error
    [job] = result.jobs
    assert (job.kind, job.state) == ("CustomJob", "SUCCEEDED")
    assert sorted(job.replicas) == ["workerpool0-0", "workerpool1-0"]
    resources = json.loads(result.outputs["gcp_resources"])["resources"]
    assert resources[0]["resourceType"] == "CustomJob"
    assert resources[0]["resourceUri"].endswith(job.name)
    outcome = result.outputs["outcome"]
    assert outcome["state"] == "JOB_STATE_SUCCEEDED" and outcome["job"] == job.name
    model_uri = outcome["modelUri"]
    assert model_uri.startswith("gs://trainpool-test/out/") and model_uri.endswith("/model/")
    assert model_uri != "gs://trainpool-test/out/model/", "the run writes under its own id"
    assert result.outputs["model"]["uri"] == model_uri
    assert (local(tmp_path, model_uri) / "model.pt").is_file(), "the chief wrote no model"
    with emulator.start(tmp_path) as emu, pytest.MonkeyPatch.context() as env:
        env.setenv(EMULATOR_ENV, emu.address)
        stored = job_client("us-central1").get_custom_job(name=job.name)
    assert stored.labels["team"] == "ranking", "the request's labels reach the job"
    assert [p.replica_count for p in stored.job_spec.worker_pool_specs] == [1, 1]


def test_sweep_run_finds_the_expected_best_trial(tmp_path: Path, own_emulator: None) -> None:
    study = {
        "metrics": {"loss": "minimize"},
        "parameters": {"lr": {"type": "discrete", "values": [0.001, 0.1]}},
        "algorithm": "grid",
    }
    result = run_local(
        PIPELINE,
        {
            "cluster_request": SMALL_REQUEST,
            "worker_count": 1,
            "study": study,
            "max_trial_count": 2,
            "parallel_trial_count": 2,
            "source_dir": EXAMPLE,
        },
        tmp_path,
    )
    assert result.state == "SUCCEEDED", result.error
    [job] = result.jobs
    assert job.kind == "HyperparameterTuningJob"
    trials = {float(trial.parameters["lr"]): trial for trial in job.trials}
    assert sorted(trials) == [0.001, 0.1]
    assert all(trial.state == "SUCCEEDED" for trial in trials.values())
    best, worst = trials[0.1].metric, trials[0.001].metric
    assert best is not None and worst is not None and best < worst
    outcome = result.outputs["outcome"]
    assert outcome["bestParameters"] == {"lr": 0.1} and outcome["bestTrialId"] == "2"
    assert outcome["metricId"] == "loss" and len(outcome["trials"]) == 2
    assert outcome["modelUri"].endswith("/2/model/"), "the model is the best trial's"
    assert result.outputs["model"]["uri"] == outcome["modelUri"]
    for trial_id in ("1", "2"):
        run_base = outcome["modelUri"].removesuffix("2/model/")
        assert (local(tmp_path, f"{run_base}{trial_id}/model/") / "model.pt").is_file()


def test_a_bad_request_fails_the_run_before_any_job(tmp_path: Path, own_emulator: None) -> None:
    bad = dict(SMALL_REQUEST, workers={"replica_count": 2, "machine_type": "n1-standrad-4"})
    result = run_local(PIPELINE, {"cluster_request": bad, "source_dir": EXAMPLE}, tmp_path)
    assert result.state == "FAILED"
    assert "n1-standrad-4" in result.error or "plan-cluster" in result.error
    assert result.jobs == []


def test_the_checked_in_yaml_names_only_the_published_image_and_no_laptop_defaults() -> None:
    text = PIPELINE.read_text()
    published = compiling.published_image(ROOT)
    images = set(re.findall(r"^\s+image: (\S+)$", text, flags=re.M))
    assert images == {published} and "@sha256:" in published
    for laptop in ("local-project", "trainpool-local", "examples/"):
        assert laptop not in text
    inputs = yaml.safe_load(text)["root"]["inputDefinitions"]["parameters"]
    assert inputs["project"]["defaultValue"] == "{{$.pipeline_google_cloud_project_id}}"
    assert inputs["location"]["defaultValue"] == "{{$.pipeline_google_cloud_location}}"


def test_submitted_to_the_emulator_with_only_a_source_dir_from_elsewhere_it_succeeds(
    tmp_path: Path, own_emulator: None
) -> None:
    from trainpool.images.service import build_image
    from trainpool.vertex.clients import pipeline_client

    root, elsewhere = tmp_path / "store", tmp_path / "elsewhere"
    (root / "gcs" / "demo-bucket").mkdir(parents=True)
    elsewhere.mkdir()
    published = build_image(
        ROOT, image_uri="local/trainpool-components", backend="local", root=root
    )
    assert published.image_uri == compiling.published_image(ROOT), "the YAML's image, rebuilt"
    with emulator.start(root) as emu:
        env = dict(os.environ, **{EMULATOR_ENV: emu.address, "TRAINPOOL_HOME": str(root)})
        cli = "from trainpool.cli import main; main()"
        target = ["--project", "demo-project", "--location", "us-central1"]
        target += ["--pipeline-root", "gs://demo-bucket/runs"]
        done = subprocess.run(
            [sys.executable, "-c", cli, "submit", str(PIPELINE), *target]
            + ["--param", f"source_dir={EXAMPLE}", "--param", "max_trial_count=0"],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "note:" not in done.stderr, "the published components image is in the store"
        name = done.stdout.split()[1]
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(EMULATOR_ENV, emu.address)
            client = pipeline_client("us-central1")
            for _ in range(360):
                job = client.get_pipeline_job(name=name)
                if job.state.name in ("PIPELINE_STATE_SUCCEEDED", "PIPELINE_STATE_FAILED"):
                    break
                time.sleep(0.5)
    run_log = (root / "pipelines" / name.rsplit("/", 1)[1] / "run.log").read_text()
    assert job.state.name == "PIPELINE_STATE_SUCCEEDED", run_log[-3000:]
    source = str(job.runtime_config.parameter_values["source_dir"])
    assert source.startswith("gs://demo-bucket/runs/trainpool/sources/"), source


def test_two_runs_write_two_models_and_the_registered_one_is_listed(
    tmp_path: Path, own_emulator: None
) -> None:
    from trainpool.vertex.clients import model_client

    primary_only = {key: value for key, value in SMALL_REQUEST.items() if key != "workers"}
    params = {"cluster_request": primary_only, "max_trial_count": 0, "source_dir": EXAMPLE}
    first = run_local(
        PIPELINE, {**params, "serving_image": "us-docker.pkg.dev/p/r/serve:1"}, tmp_path
    )
    assert first.state == "SUCCEEDED", first.error
    first_model = local(tmp_path, first.outputs["outcome"]["modelUri"]) / "model.pt"
    stamp = first_model.stat().st_mtime_ns
    second = run_local(PIPELINE, params, tmp_path)  # the same pipeline, run again (a schedule)
    assert second.state == "SUCCEEDED", second.error
    second_model = local(tmp_path, second.outputs["outcome"]["modelUri"]) / "model.pt"
    assert second_model.is_file() and second_model != first_model
    assert first_model.stat().st_mtime_ns == stamp, "the second run left the first one's files"
    with emulator.start(tmp_path) as emu, pytest.MonkeyPatch.context() as env:
        env.setenv(EMULATOR_ENV, emu.address)
        models = list(model_client("us-central1").list_models(parent=PARENT_LOCAL))
    assert [m.artifact_uri for m in models] == [first.outputs["outcome"]["modelUri"]]
    assert models[0].container_spec.image_uri == "us-docker.pkg.dev/p/r/serve:1"


def test_the_model_output_feeds_gcpc_model_upload_op(tmp_path: Path) -> None:
    from google_cloud_pipeline_components.v1.model import ModelUploadOp
    from kfp import compiler, components, dsl

    launch = components.load_component_from_file(
        str(ROOT / "component_specs/launch_custom_job.yaml")
    )

    spec = {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}}]}

    @dsl.pipeline(name="train-and-register")  # no parameters: this module's annotations are text
    def train_and_register():  # type: ignore[no-untyped-def]
        job = launch(project="p", location="us-central1", display_name="t", custom_job_spec=spec)
        ModelUploadOp(display_name="m", unmanaged_container_model=job.outputs["model"])

    out = tmp_path / "p.yaml"
    compiler.Compiler().compile(train_and_register, str(out))  # type-checks the artifact
    compiled = yaml.safe_load(out.read_text())
    upload = compiled["root"]["dag"]["tasks"]["model-upload"]["inputs"]["artifacts"]
    wired = upload["unmanaged_container_model"]["taskOutputArtifact"]
    assert wired == {"outputArtifactKey": "model", "producerTask": "launch-custom-job"}
    model_type = compiled["components"]["comp-launch-custom-job"]["outputDefinitions"]
    assert model_type["artifacts"]["model"]["artifactType"]["schemaTitle"] == (
        "google.UnmanagedContainerModel"
    )


def test_a_preempted_spot_job_retries_resumes_from_its_checkpoint_and_succeeds(
    tmp_path: Path, own_emulator: None
) -> None:
    import threading

    import torch

    request = dict(SMALL_REQUEST, args=["--epochs=6"], scheduling_strategy="SPOT")
    seen: dict[str, object] = {}

    def preempt_after_epoch_two(emu: emulator.Emulator) -> None:
        client = job_client("us-central1")
        for _ in range(600):
            running = [
                j
                for j in client.list_custom_jobs(parent=PARENT_LOCAL)
                if j.state.name == "JOB_STATE_RUNNING"
            ]
            if running:
                base = running[0].job_spec.base_output_directory.output_uri_prefix
                checkpoint = local(tmp_path, f"{base}/checkpoints/") / "checkpoint.pt"
                if checkpoint.is_file() and torch.load(checkpoint)["epoch"] >= 2:
                    ended = emu.preempt(running[0].name)
                    seen.update(job=ended, saved=torch.load(checkpoint, weights_only=True)["epoch"])
                    return
            time.sleep(0.2)

    with emulator.start(tmp_path) as emu, pytest.MonkeyPatch.context() as env:
        env.setenv(EMULATOR_ENV, emu.address)
        chaos = threading.Thread(target=preempt_after_epoch_two, args=(emu,), daemon=True)
        chaos.start()
        params = {"cluster_request": request, "max_trial_count": 0, "source_dir": EXAMPLE}
        result = run_local(PIPELINE, params, tmp_path)
        chaos.join(timeout=5)
        assert result.state == "SUCCEEDED", result.error
        preempted = seen["job"]
        assert preempted.state.name == "JOB_STATE_FAILED" and "STOCKOUT" in preempted.error.message
        jobs = list(job_client("us-central1").list_custom_jobs(parent=PARENT_LOCAL))
    # kfp.local gives a retried task a new task id, so its job is a new task's first attempt;
    # a retry under the same task id (Vertex) is the next attempt: test_vertex_jobs covers it
    assert sorted(j.state.name for j in jobs) == ["JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"]
    retry = next(j for j in jobs if j.state.name == "JOB_STATE_SUCCEEDED")
    assert retry.name != preempted.name
    primary_log = (
        tmp_path / "jobs" / retry.name.rsplit("/", 1)[1] / "workerpool0-0.log"
    ).read_text()
    saved = int(str(seen["saved"]))
    assert 2 <= saved < 6
    assert f"resuming from epoch {saved + 1}" in primary_log
    assert f"epoch {saved}:" not in primary_log, "the retry did not train the saved epochs again"
    model_uri = result.outputs["outcome"]["modelUri"]
    assert retry.job_spec.base_output_directory.output_uri_prefix + "/model/" == model_uri
    assert result.outputs["model"]["uri"] == model_uri
    assert (local(tmp_path, model_uri) / "model.pt").is_file()


NIGHTLY_TRAINER = """
import json, os, re, time
def local(uri):
    return "/gcs/" + uri[len("gs://"):]
model_dir, checkpoints = local(os.environ["AIP_MODEL_DIR"]), local(os.environ["AIP_CHECKPOINT_DIR"])
night = re.search(r"-([0-9]{8})[0-9]{6}-", os.environ["AIP_MODEL_DIR"]).group(1)
loss = float(open("/gcs/demo-data/loss-" + night).read())  # what tonight's data gives
os.makedirs(checkpoints, exist_ok=True)
checkpoint = os.path.join(checkpoints, "checkpoint.json")
if os.path.exists(checkpoint):
    print("resuming from epoch", json.load(open(checkpoint))["epoch"] + 1, flush=True)
else:
    json.dump({"epoch": 1}, open(checkpoint, "w"))
while os.path.exists("/gcs/demo-data/hold-" + night):  # the test preempts it meanwhile
    time.sleep(0.05)
os.makedirs(model_dir, exist_ok=True)
json.dump({"loss": loss}, open(os.path.join(model_dir, "metrics.json"), "w"))
open(os.path.join(model_dir, "model.txt"), "w").write(night)
print("trained: loss", loss, flush=True)
"""
"""Tonight's trainer for the rehearsed week: its loss is what the night's data file says, so
nights get better, worse and equal; it checkpoints, resumes, and holds while a hold file
exists (for the test to preempt it while it runs)."""
WEEK = {1: 0.5, 2: 0.4, 3: 0.45, 4: 0.4, 5: 0.3, 6: 0.35, 7: 0.25}
"""Each night's loss: first (promotes), better, worse (preempted), equal, better, worse, better."""
SERVING = "us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-0:latest"


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_a_week_of_nightly_retraining_rehearsed_on_the_emulator(
    tmp_path: Path, own_emulator: None
) -> None:
    """The rehearsal of docs/guides/pipeline.md: `trainpool submit --schedule` the checked-in
    pipeline nightly with a serving image (so its retraining gate runs), `trainpool clock
    advance` seven nights whose data make the model better, worse or equal, `trainpool jobs
    preempt` night 3's SPOT job while it trains. Seven PipelineJobs, seven model folders;
    night 3 retried and resumed from its checkpoint; night 4 came due while night 3 still ran,
    so it was queued (--allow-queueing) and started when night 3 ended. Only the better nights
    (and the first) promote: each night is a version of one Model, and `blessed` ends on
    night 7's, having been on nights 1, 2 and 5; `trainpool schedule runs` says so night by
    night, and one alias move rolls back."""
    from google.cloud import aiplatform
    from typer.testing import CliRunner

    from trainpool.cli import app
    from trainpool.config import HOME_ENV
    from trainpool.emulator.pipeline_jobs.runs import run_id
    from trainpool.kfp_local.execute import RUN_LABEL
    from trainpool.redirect import install
    from trainpool.vertex.clients import model_client
    from trainpool.vertex.schedules import runs

    def cli(*args: str) -> str:
        done = CliRunner().invoke(app, list(args))
        assert done.exit_code == 0, f"trainpool {' '.join(args)}: {done.stderr}"
        return str(done.stdout)

    parent = "projects/demo-project/locations/us-central1"
    target = ["--project", "demo-project", "--location", "us-central1"]
    request = {
        "primary": {"machine_type": "n1-standard-4", "command": ["python3", "-c", NIGHTLY_TRAINER]},
        "scheduling_strategy": "SPOT",
    }
    data = tmp_path / "gcs" / "demo-data"
    data.mkdir(parents=True)
    for night, loss in WEEK.items():
        (data / f"loss-2040010{night}").write_text(str(loss))
    hold = data / "hold-20400103"
    hold.write_text("")
    (tmp_path / "gcs" / "demo-bucket").mkdir(parents=True)
    with emulator.start(tmp_path) as emu, pytest.MonkeyPatch.context() as env:
        env.setenv(EMULATOR_ENV, emu.address)
        env.setenv(HOME_ENV, str(tmp_path))
        cli("clock", "advance", "--to", "2040-01-01T00:00:00Z")
        cli(
            "submit", str(PIPELINE), *target, "--pipeline-root", "gs://demo-bucket/runs",
            "--param", "image_uri=python:3.11", "--param", "max_trial_count=0",
            "--param", f"cluster_request={json.dumps(request)}",
            "--param", f"serving_image={SERVING}", "--param", "display_name=nightly-model",
            "--schedule", "0 3 * * *", "--display-name", "nightly", "--allow-queueing",
        )  # fmt: skip
        cli("clock", "advance", "2d", "--wait")  # nights 1 and 2, each run at its night
        [started] = cli("clock", "advance", "1d").splitlines()[:1]  # night 3: no wait
        night3 = started.rsplit(" ", 1)[1]
        label = f'labels.{RUN_LABEL}="{run_id(night3)}"'
        client = job_client("us-central1")
        for _ in range(1200):
            found = list(client.list_custom_jobs(request={"parent": parent, "filter": label}))
            if found and found[0].state.name == "JOB_STATE_RUNNING":
                base = found[0].job_spec.base_output_directory.output_uri_prefix
                if (local(tmp_path, f"{base}/checkpoints/") / "checkpoint.json").is_file():
                    break
            time.sleep(0.05)
        assert "is JOB_STATE_FAILED: STOCKOUT" in cli("jobs", "preempt", found[0].name)
        hold.unlink()
        night4 = cli("clock", "advance", "1d", "--wait")  # due while night 3 retries
        assert "run of 2040-01-04T03:00:00Z queued: max_concurrent_active_run_count" in night4
        cli("clock", "advance", "3d", "--wait")  # nights 5, 6 and 7
        history = cli("schedule", "runs", "nightly", *target)
        nights = runs(f"{parent}/schedules/1000", "us-central1")
        night3_jobs = list(client.list_custom_jobs(request={"parent": parent, "filter": label}))
        [model] = model_client("us-central1").list_models(parent=parent)
        install()  # the SDK as a user's script has it under `trainpool exec`
        aiplatform.init(project="demo-project", location="us-central1")
        registry = aiplatform.models.ModelRegistry(model.name)
        versions = {v.version_id: v for v in registry.list_versions()}
        blessed = aiplatform.Model(model_name=f"{model.name.rsplit('/', 1)[1]}@blessed")
        registry.add_version_aliases(["blessed"], version="5")  # the rollback: one alias move
        rolled_back = registry.get_model(version="blessed")
    print(history)
    assert [run.job.state.name for run in nights] == ["PIPELINE_STATE_SUCCEEDED"] * 7, history
    assert [run.job.name.rsplit("/", 1)[1] for run in nights] == [
        f"distributed-training-2040010{day}030000-1000" for day in range(1, 8)
    ]
    models = [run.model_uri for run in nights]
    assert len(set(models)) == 7
    for run in nights:
        assert run.model_uri.startswith(f"gs://demo-bucket/runs/{run.job.name.rsplit('/')[-1]}/")
        assert (local(tmp_path, run.model_uri) / "model.txt").is_file()
    failed, retry = sorted(night3_jobs, key=lambda job: job.create_time)
    assert failed.state.name == "JOB_STATE_FAILED" and "STOCKOUT" in failed.error.message
    assert retry.state.name == "JOB_STATE_SUCCEEDED"
    retry_log = tmp_path / "jobs" / retry.name.rsplit("/", 1)[1] / "workerpool0-0.log"
    assert "resuming from epoch" in retry_log.read_text(), "night 3 resumed its checkpoint"
    assert nights[3].job.create_time >= nights[2].job.end_time, "night 4 waited for night 3"
    for night, run in enumerate(nights, start=1):
        assert run.job.create_time.day == night, "each run was created at its own night"
        if night != 3:  # night 3 went on into night 4, where the clock waited for it
            assert run.job.end_time.day == night, "and ran at its night"
    assert "run of 2040-01-04T03:00:00Z queued: max_concurrent_active_run_count 1" in history
    # the gate: only the first night and the better ones promote; every night is a version
    decisions = [run.verdict["decision"] for run in nights]
    assert decisions == ["promoted", "promoted", "kept", "kept", "promoted", "kept", "promoted"]
    assert [run.verdict["challenger"] for run in nights] == list(WEEK.values())
    assert [run.verdict["blessed"] for run in nights] == [None, 0.5, 0.4, 0.4, 0.4, 0.3, 0.3]
    assert [run.verdict["winner"] for run in nights] == [
        "challenger", "challenger", "blessed", "tie", "challenger", "blessed", "challenger"
    ]  # fmt: skip
    assert sorted(versions) == [str(n) for n in range(1, 8)], "one Model, a version a night"
    assert {v.version_id: v.model_resource_name for v in versions.values()} == {
        n: model.name for n in versions
    }
    for night, run in enumerate(nights, start=1):
        assert run.verdict["model"] == f"{model.name}@{night}"
    assert blessed.version_id == "7" and blessed.uri == nights[6].model_uri
    assert (
        "blessed" in blessed.version_aliases
        and float(blessed.labels["trainpool-gate-value"].replace("_", ".")) == 0.25
    )
    assert rolled_back.version_id == "5", "rolled back to night 5's version"
    rows = history.splitlines()
    assert rows[0] == f"{parent}/schedules/1000 (nightly): ACTIVE, 7 run(s)"
    assert " FAILED(STOCKOUT),SUCCEEDED " in rows[4], "night 3's jobs: preempted, retried"
    for row, uri in zip(rows[2:9], models, strict=True):
        assert " SUCCEEDED " in row and uri in row
    gate = [row.split(")  ", 1)[1] for row in rows[2:9]]
    short = model.name.rsplit("/", 1)[1]
    assert gate == [
        f"promoted {short}@1 (loss 0.5, the first)",
        f"promoted {short}@2 (loss 0.4, blessed {short}@1 had 0.5: better by 0.1)",
        f"kept blessed {short}@2 (loss 0.45 vs 0.4: worse by 0.05; {short}@3 unpromoted)",
        f"kept blessed {short}@2 (loss 0.4 vs 0.4: equal; {short}@4 unpromoted)",
        f"promoted {short}@5 (loss 0.3, blessed {short}@2 had 0.4: better by 0.1)",
        f"kept blessed {short}@5 (loss 0.35 vs 0.3: worse by 0.05; {short}@6 unpromoted)",
        f"promoted {short}@7 (loss 0.25, blessed {short}@5 had 0.3: better by 0.05)",
    ], history
