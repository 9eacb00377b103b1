"""Each pipeline task in a sandbox of its own (trainpool.emulator.pipeline_jobs.task_sandboxes,
task_python, task_packages): its image's Python, its own installs, nothing reaching the emulator.

On Vertex each task is a container started from its image; kfp's bootstrap installs the
component's ``packages_to_install`` and kfp at its start (kfp ``dsl/component_factory.py``,
``_get_packages_to_install_command``). Google's pipeline notebooks install old versions
there (``kfp==2.7.0``, ``numpy==1.26.4``): run one after another they once downgraded the
emulator's own packages and broke the next pipeline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.pipelines import compile_fixture

from trainpool.emulated.pipeline_run import run_local
from trainpool.emulator.jobs import replica_python
from trainpool.emulator.pipeline_jobs import task_packages, task_python
from trainpool.home import Home
from trainpool.spec.pipeline_params import load_pipeline_spec

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "pipelines" / "distributed_training.yaml"


def command_of(spec: dict, component: str) -> list[str]:
    executor = spec["components"][component]["executorLabel"]
    container = spec["deploymentSpec"]["executors"][executor]["container"]
    return [*container["command"], *container["args"]]


def test_kfps_bootstrap_is_read_into_its_installs_and_the_command_without_them(
    tmp_path: Path,
) -> None:
    spec = load_pipeline_spec(compile_fixture("with_packages", tmp_path))
    command = command_of(spec, "comp-with-packages")
    found = task_packages.bootstrap(command)
    assert found is not None
    installs, rest = found
    index = ["--index-url", "https://example.org/simple"]
    index += ["--trusted-host", "https://example.org/simple"]
    import kfp

    assert installs == [
        [*index, "numpy==1.26.4", "pandas<3"],
        [
            *index,
            f"kfp=={kfp.__version__}",
            "--no-deps",
            'typing-extensions>=3.7.4,<5; python_version<"3.9"',
        ],
    ]
    assert rest[:2] == ["sh", "-c"] and "pip install" not in rest[2]
    assert rest[2].rstrip().endswith('"$0" "$@"')
    assert rest[3:] == command[3:]  # the component's program, unchanged


def test_a_script_of_another_shape_runs_as_it_is() -> None:
    assert task_packages.bootstrap(["python3", "-m", "x"]) is None
    script = 'PIP_DISABLE_PIP_VERSION_CHECK=1 pip install x && "$0" "$@"'
    assert task_packages.bootstrap(["sh", "-c", script, "sh"]) is None


def test_each_image_has_its_stand_in(tmp_path: Path) -> None:
    home = Home(tmp_path / "root")
    notes: list[str] = []
    clean = task_python.for_image(home, "python:3.11", "python", notes.append)
    assert clean.sites == tuple(replica_python.bundled_wheels())  # pip and setuptools only
    gcpc = "gcr.io/ml-pipeline/google-cloud-pipeline-components:2.22.0"
    assert task_python.for_image(home, gcpc, "launcher", notes.append).sites == (
        task_python.emulator_sites()
    )
    components = task_python.for_image(
        home, "us-docker.pkg.dev/p/r/trainpool-components:1", "python", notes.append
    )
    assert (components.sites[0] / "trainpool").resolve() == Path(
        task_python.trainpool.__file__
    ).resolve().parent
    assert notes == []
    task_python.for_image(home, "busybox:1", "python", notes.append)
    assert "neither a prebuilt image" in notes[0]


def distributions() -> list[list[str]]:
    """The packages (name, version) of the Python the emulator runs on, read in a process
    that sees only its own site directories."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = (
        "import importlib.metadata as m, json; "
        "print(json.dumps(sorted([d.metadata['Name'], d.version] for d in m.distributions())))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.timeout(900)
def test_a_tasks_old_kfp_and_numpy_reach_neither_the_emulator_nor_the_products_pipeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VERTEX_AI_EMULATOR_HOST", raising=False)
    before = distributions()
    old = run_local(compile_fixture("old_versions", tmp_path), {}, tmp_path / "root")
    assert old.state == "SUCCEEDED", (old.error, [list(t.tail) for t in old.tasks])
    assert old.outputs["Output"] == "kfp 2.7.0, numpy 1.26.4"
    assert distributions() == before
    again = run_local(compile_fixture("echo_command", tmp_path), {}, tmp_path / "root")
    assert again.state == "SUCCEEDED", again.error  # kfp 2.17 over a clean Python: no 2.7
    product = run_local(
        PIPELINE,
        {
            "cluster_request": {
                "primary": {"machine_type": "n1-standard-4"},
                "args": ["--epochs=1"],
                "base_output_directory": "gs://trainpool-test/out",
            },
            "max_trial_count": 0,
            "source_dir": str(ROOT / "examples" / "pytorch_ddp"),
        },
        tmp_path / "root",
    )
    assert product.state == "SUCCEEDED", (product.error, [list(t.tail) for t in product.tasks])
    assert distributions() == before
