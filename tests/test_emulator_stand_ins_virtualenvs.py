"""Prebuilt training images as local stand-ins (emulator/stand_ins/virtualenvs.py).

What each image ships: the "Prebuilt containers for custom training" page
(https://cloud.google.com/vertex-ai/docs/training/pre-built-containers), in the catalog.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.jobs import wait_job
from fixtures.stand_ins import share_stand_ins
from google.cloud.aiplatform_v1.types.job_state import JobState
from packaging.utils import canonicalize_name

import trainpool.emulator as emulator
from trainpool.catalog import PrebuiltImage, prebuilt_image, prebuilt_images
from trainpool.catalog.included import included_packages
from trainpool.emulator.stand_ins import pip_versions, virtualenvs
from trainpool.emulator.stand_ins.pip_versions import Choice
from trainpool.home import Home
from trainpool.vertex.clients import job_client

XGBOOST = "us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.1-1:latest"
SKLEARN = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest"
SKLEARN_16 = "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-6:latest"
XGBOOST_21 = "us-docker.pkg.dev/vertex-ai/training/xgboost-cpu.2-1:latest"


def image(uri: str) -> PrebuiltImage:
    found = prebuilt_image(uri)
    assert found is not None
    return found


def test_every_pytorch_image_gets_the_cpu_torch_of_this_machine() -> None:
    pytorch = [i for i in prebuilt_images().values() if i.framework == "pytorch"]
    assert pytorch and all(virtualenvs.requested(i)["torch"] == "2.13.0" for i in pytorch)
    assert all(virtualenvs.requested(i)["torch"] == "2.13.0" for i in pytorch)
    with_pandas = image("us-docker.pkg.dev/vertex-ai/training/pytorch-xla.2-4.py310:latest")
    asked = virtualenvs.requested(with_pandas)
    assert {"pandas": "2.2.3", "scikit-learn": "1.6.1", "torch": "2.13.0"}.items() <= asked.items()
    # the rest at the versions of the image's time (before scikit-learn 1.6.1's day), not the
    # newest: protobuf 5.29.3, not 7.x
    assert asked["protobuf"] == "5.29.3" and asked["numpy"] == "2.2.1"


def test_tensorflow_is_the_cpu_build_of_the_images_series() -> None:
    gpu = image("us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-17.py310:latest")
    assert virtualenvs.requested(gpu) == {"tensorflow-cpu": "2.17.*"}
    assert virtualenvs.key(gpu) == "tensorflow-2.17"


def test_xgboost_image_asks_for_the_documented_versions() -> None:
    asked = virtualenvs.requested(image(XGBOOST))
    assert {
        "numpy": "1.18.5",
        "pandas": "1.0.4",
        "scipy": "1.4.1",
        "scikit-learn": "0.23.1",
        "xgboost": "1.1.1",
        "google-cloud-storage": "1.29.0",
        "grpcio": "1.29.0",
    }.items() <= asked.items()


def test_every_package_the_page_lists_is_pinned_and_storage_is_not_the_newest() -> None:
    # Google's page gives the scikit-learn 1.0 image's whole PyPI list, google-cloud-storage
    # 1.29.0 among it: the stand-in pins it, and protobuf, rather than taking the newest
    sklearn = image(SKLEARN)
    asked = virtualenvs.requested(sklearn)
    listed = {p.package: p.version for p in included_packages("scikit-learn", "1.0")}
    assert asked == listed
    assert asked["protobuf"] == listed["protobuf"]
    assert virtualenvs.unpinned(sklearn, virtualenvs.ALWAYS) == ("cloudml-hypertune",)
    assert virtualenvs.unpinned(sklearn, virtualenvs.BUILD_TOOLS) == ()  # wheel 0.34.2
    # TensorFlow's list on the page names no google-cloud-storage version: newest there
    tf = image("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest")
    assert virtualenvs.unpinned(tf, virtualenvs.ALWAYS) == virtualenvs.ALWAYS
    lines = virtualenvs.describe(sklearn, [Choice("protobuf", "3.20.3", "3.20.3")])
    assert lines[-1] == "  cloudml-hypertune: newest (every prebuilt image ships them; " + (
        "Google's page gives no version)"
    )


@pytest.mark.parametrize("uri", [SKLEARN_16, XGBOOST_21])
def test_an_image_whose_page_lists_five_holds_the_rest_at_its_time_not_the_newest(
    uri: str,
) -> None:
    # issue 44 item 8: the page lists numpy, pandas, scipy, scikit-learn and xgboost for these
    # images and nothing else; their stand-ins took protobuf and google-cloud-storage at the
    # newest (protobuf 7.x). The catalog now holds every other distribution at the newest
    # release published before scipy 1.15.2 (2025-02-17), the newest release the page lists
    found = image(uri)
    asked = virtualenvs.requested(found)
    rows = included_packages(found.framework, found.version)
    page = {p.package for p in rows if p.verified}
    assert page == {"numpy", "pandas", "scipy", "scikit-learn", "xgboost"}
    assert asked["protobuf"] == "5.29.3" and asked["google-cloud-storage"] == "3.0.0"
    assert virtualenvs.unpinned(found, virtualenvs.ALWAYS) == ("cloudml-hypertune",)  # 2019
    inferred = [p for p in rows if not p.verified]
    assert len(inferred) > 20
    assert all("2025-02-17" in p.source and "scipy 1.15.2" in p.source for p in inferred)
    lines = virtualenvs.describe(
        found, [Choice("protobuf", "5.29.3", "5.29.3"), Choice("scipy", "1.15.2", "1.15.2")]
    )
    assert lines[0] == (
        "  protobuf 5.29.3 (of the image's time: Google's page names no version; the "
        "catalog's row says how it was chosen)"
    )
    assert lines[1] == "  scipy 1.15.2 (as on Vertex: 1.15.2)"


def test_only_what_the_page_lists_is_borrowed() -> None:
    # an image the page lists nothing for borrows the nearest list's names, never the
    # versions of another image's time the catalog inferred (nvidia-nccl-cu12, zipp, ...)
    for found in prebuilt_images().values():
        nearest, names = virtualenvs.borrowed(found)
        if nearest:
            page = {p.package for p in included_packages(found.framework, nearest) if p.verified}
            assert set(names) <= page, found.uri


def test_a_pin_gives_way_to_what_another_pin_depends_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # scikit-learn 1.1.3 (standing in for 1.0, which has no build here) needs joblib>=1.0.0;
    # the page's joblib 0.15.1 gives way to the nearest version that installs with it
    said = (
        "ERROR: Cannot install joblib==0.15.1 and scikit-learn==1.1.3 because these package "
        "versions have conflicting dependencies.\n\nThe conflict is caused by:\n"
        "    The user requested joblib==0.15.1\n"
        "    scikit-learn 1.1.3 depends on joblib>=1.0.0\n"
    )
    listed = "ERROR: (from versions: 0.14.1, 0.15.1, 0.17.0, 1.0.0, 1.0.1, 1.1.0, 1.4.2)"

    def dry_run(python: Path, requirement: str, *, binary: bool = True) -> Any:
        return subprocess.CompletedProcess([], 1, "", listed)

    monkeypatch.setattr(pip_versions, "dry_run", dry_run)
    choices = [Choice("joblib", "0.15.1", "0.15.1"), Choice("scikit-learn", "1.0", "1.1.3")]
    assert virtualenvs._give_way(tmp_path / "python", choices, said)
    assert choices[0].installed == "1.0.1"
    assert choices[1] == Choice("scikit-learn", "1.0", "1.1.3")
    lines = virtualenvs.describe(image(SKLEARN), choices)
    assert lines[0] == (
        "  joblib 1.0.1 (Vertex has 0.15.1; the other packages as they install here need "
        "joblib>=1.0.0: the nearest that installs with them)"
    )
    # a conflict that is not between pins is not given way to: the build fails with pip's words
    assert not virtualenvs._give_way(tmp_path / "python", choices, "ERROR: no such thing")


def test_every_prebuilt_image_gets_numpy_and_pandas() -> None:
    # Every Vertex image ships them: the page's "Included dependencies" list pandas (and
    # numpy) for XGBoost, scikit-learn, TensorFlow 2.4 and PyTorch 2.4; pandas requires numpy
    # (its Requires-Dist). For the versions the page lists nothing for, the nearest listed
    # version's packages; Ray images hold Ray Data (numpy, pandas, pyarrow).
    for found in prebuilt_images().values():
        held = set(virtualenvs.requested(found)) | set(virtualenvs.borrowed(found)[1])
        if virtualenvs.EXTRAS.get(found.framework) == "data":
            held |= {"numpy", "pandas", "pyarrow"}
        assert "pandas" in held, found.uri


def test_a_version_the_page_lists_nothing_for_borrows_the_nearest_listed_one() -> None:
    pytorch = image("us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.1-13:latest")
    assert virtualenvs.borrowed(pytorch) == ("2.4", ("pandas", "scikit-learn"))
    tf = image("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest")
    assert virtualenvs.borrowed(tf) == ("2.4", ("numpy", "pandas", "scikit-learn", "xgboost"))
    listed = image("us-docker.pkg.dev/vertex-ai/training/pytorch-xla.2-4.py310:latest")
    assert virtualenvs.borrowed(listed) == ("", ())
    lines = virtualenvs.borrowed_notes(pytorch, "2.4", {"pandas": "2.3.3"})
    assert lines == [
        "  pandas 2.3.3 (Google's page lists no packages for pytorch 1.13; pytorch 2.4's, the "
        "nearest version it lists, has pandas 2.2.3: installed the version that installs with "
        "the rest)"
    ]


def test_the_job_log_says_what_was_asked_and_what_installed() -> None:
    choices = [
        Choice("numpy", "1.18.5", "1.23.5"),
        Choice("xgboost", "1.1.1", "1.1.1"),
        Choice("torch", "2.13.0", "2.13.0"),
    ]
    lines = virtualenvs.describe(image(XGBOOST), choices)
    assert lines[0].startswith("  numpy 1.23.5 (Vertex has 1.18.5, which has no build for Python")
    assert lines[1] == "  xgboost 1.1.1 (as on Vertex: 1.1.1)"
    assert lines[2].startswith("  torch 2.13.0 (the image has PyTorch 1.1; every PyTorch image")


def fake_build(folder: Path) -> None:
    """What a build leaves in ``folder``, without pip: its record."""
    (folder / "venv/bin").mkdir(parents=True, exist_ok=True)
    meta = {
        "site": str(folder / "venv/lib/python3.11/site-packages"),
        "python": "3.11",
        "notes": ["  xgboost 1.1.1"],
        "installed": {"xgboost": "1.1.1"},
        "recipe": virtualenvs.RECIPE,
    }
    (folder / virtualenvs.BUILT).write_text(json.dumps(meta))


def test_a_stand_in_whose_root_moved_is_built_again_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a root moves with the project it sits in (./.trainpool); a virtualenv holds its own
    # absolute paths, so a moved stand-in would run replicas that cannot import what it holds
    builds: list[Path] = []

    def build(folder: Path, built_for: PrebuiltImage) -> None:
        builds.append(folder)
        fake_build(folder)

    monkeypatch.setattr(virtualenvs, "_build", build)
    virtualenvs.ensure(Home(tmp_path / "a"), image(XGBOOST), lambda line: None)
    (tmp_path / "a").rename(tmp_path / "b")
    notes: list[str] = []
    virtualenvs.ensure(Home(tmp_path / "b"), image(XGBOOST), notes.append)
    moved = (tmp_path / "b/stand-ins/xgboost-1.1").resolve()
    assert builds == [(tmp_path / "a/stand-ins/xgboost-1.1").resolve(), moved]
    assert notes[0] == (
        f"the stand-in of xgboost 1.1 was built in {tmp_path.resolve() / 'a/stand-ins/xgboost-1.1'}"
        f" and has moved to {moved}: a virtualenv holds its own paths, so it is built again"
    )
    virtualenvs.ensure(Home(tmp_path / "b"), image(XGBOOST), lambda line: None)
    assert len(builds) == 2  # built here now: kept


def test_two_jobs_at_once_build_an_environment_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[str] = []

    def build(folder: Path, built_for: PrebuiltImage) -> None:
        builds.append(built_for.uri)
        time.sleep(0.3)  # both callers are waiting on the lock meanwhile
        (folder / "venv/bin").mkdir(parents=True)
        fake_build(folder)

    monkeypatch.setattr(virtualenvs, "_build", build)
    home = Home(tmp_path)
    notes: list[list[str]] = [[], []]
    threads = [
        threading.Thread(target=virtualenvs.ensure, args=(home, image(XGBOOST), notes[i].append))
        for i in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builds == [XGBOOST]
    assert sum("building the environment" in line for n in notes for line in n) == 1
    assert all(n[-1].splitlines()[-1] == "  xgboost 1.1.1" for n in notes)


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with emulator.start(share_stand_ins(tmp_path / "root")) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        yield job_client("us-central1")


@pytest.mark.timeout(180)
def test_a_failed_build_fails_the_job_with_pips_words(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(virtualenvs, "key", lambda _: "broken-0")
    monkeypatch.setattr(
        virtualenvs, "requested", lambda _: {"trainpool-no-such-package-h21": "1.0"}
    )
    container = {"image_uri": XGBOOST, "command": ["python", "-c", "print(1)"]}
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": container,
    }
    created = client.create_custom_job(
        parent="projects/demo/locations/us-central1",
        custom_job={"display_name": "broken", "job_spec": {"worker_pool_specs": [pool]}},
    )
    done = wait_job(client.get_custom_job, created.name, 170)
    assert done.state == JobState.JOB_STATE_FAILED
    message = done.error.message
    assert message.startswith(
        f"workerPoolSpecs[0].containerSpec.imageUri: {XGBOOST!r}: the local environment of xgboost"
    )
    assert "no version of trainpool-no-such-package-h21 installs here" in message
    assert "No matching distribution found for trainpool-no-such-package-h21" in message


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_trainer_importing_numpy_and_pandas_runs_on_pytorch_1_13(
    client: Any, tmp_path: Path
) -> None:
    # Google's PyTorch notebook reading its data from Cloud Storage runs CustomTrainingJob on
    # pytorch-gpu.1-13 and imports numpy and pandas, which every Vertex PyTorch image ships
    uri = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.1-13:latest"
    code = "import numpy, pandas, torch; print('numpy', numpy.__version__, 'pandas', pandas.__version__)"  # noqa: E501
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {"image_uri": uri, "command": ["python3", "-c", code]},
    }
    created = client.create_custom_job(
        parent="projects/demo/locations/us-central1",
        custom_job={"display_name": "pandas", "job_spec": {"worker_pool_specs": [pool]}},
    )
    done = wait_job(client.get_custom_job, created.name, 580)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error.message
    files = Home(tmp_path / "root").job(created.name.rsplit("/", 1)[1])
    assert "numpy " in files.replica_log("workerpool0-0").read_text()
    log = files.log.read_text()
    assert "(Google's page lists no packages for pytorch 1.13; pytorch 2.4's, the nearest" in log


def recorded_against_installed(home: Home, uri: str) -> dict[str, Any]:
    """The stand-in of ``uri`` built (or the session's), its ``environment.json``; each
    version it records checked against what its Python finds installed."""
    found = image(uri)
    virtualenvs.ensure(home, found, lambda _: None)
    folder = home.stand_ins / virtualenvs.key(found)
    meta: dict[str, Any] = json.loads((folder / virtualenvs.BUILT).read_text())
    python = folder / "venv" / "bin" / "python"
    assert meta["held"] == pip_versions.held(python)
    held = meta["held"]
    for package, version in meta["installed"].items():
        assert held[canonicalize_name(package)] == version, package
    return meta


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize(
    "uri",
    [
        SKLEARN,
        XGBOOST,
        SKLEARN_16,
    ],
)
def test_a_stand_in_holds_what_it_records_and_protobuf_as_the_catalog_pins_it(
    uri: str, tmp_path: Path
) -> None:
    # every package the page lists is installed at the version the build chose for it (the
    # page's, or the nearest that installs), protobuf at the catalog's, and what the
    # environment records holding is what its Python finds
    home = Home(share_stand_ins(tmp_path / "root"))
    found = image(uri)
    meta = recorded_against_installed(home, uri)
    listed = {p.package: p.version for p in included_packages(found.framework, found.version)}
    assert set(meta["installed"]) == set(listed)
    assert meta["held"]["protobuf"] == listed["protobuf"]
    assert meta["installed"]["protobuf"] == listed["protobuf"]
    assert meta["held"]["google-cloud-storage"] == listed["google-cloud-storage"]


MLFLOW_TRAINER = """
import importlib, json, subprocess, sys, types
from importlib import metadata
pip = [sys.executable, "-m", "pip", "install", "--quiet"]
subprocess.run([*pip, "mlflow"], check=True)
# the mlflow pip takes with nothing installed, its dependencies included (the index may hold
# an mlflow whose mlflow-skinny is not there yet)
clean = subprocess.run(
    [*pip, "--dry-run", "--ignore-installed", "--report", "-", "mlflow"],
    check=True, capture_output=True, text=True,
)
taken = json.loads(clean.stdout)["install"]
print("newest", next(i["metadata"]["version"] for i in taken if i["metadata"]["name"] == "mlflow"))
print("mlflow", metadata.version("mlflow"), "protobuf", metadata.version("protobuf"))
# mlflow's generated protobuf modules, with the protobuf pip chose (mlflow's own __init__,
# which imports pandas and the rest, left out: a package of the same folder stands in)
folder = metadata.distribution("mlflow").locate_file("mlflow")
stub = types.ModuleType("mlflow")
stub.__path__ = [str(folder)]
sys.modules["mlflow"] = stub
importlib.import_module("mlflow.protos.service_pb2")
print("protos import")
del sys.modules["mlflow"]
"""


def run_mlflow_trainer(client: Any, root: Path, uri: str) -> str:
    """A CustomJob on ``uri`` whose trainer ``pip install``s mlflow; its replica's output."""
    pool = {
        "replica_count": 1,
        "machine_spec": {"machine_type": "n1-standard-4"},
        "container_spec": {
            "image_uri": uri,
            "command": ["python3", "-c", MLFLOW_TRAINER],
        },
    }
    created = client.create_custom_job(
        parent="projects/demo/locations/us-central1",
        custom_job={"display_name": "mlflow", "job_spec": {"worker_pool_specs": [pool]}},
    )
    files = Home(root).job(created.name.rsplit("/", 1)[1])
    done = wait_job(client.get_custom_job, created.name, 1400, logs=files.dir)
    assert done.state == JobState.JOB_STATE_SUCCEEDED, done.error.message
    return files.replica_log("workerpool0-0").read_text()


def said(printed: str, word: str) -> list[str]:
    return next(line.split()[1:] for line in printed.splitlines() if line.startswith(word + " "))


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_a_trainer_installing_mlflow_on_scikit_learn_1_0_gets_the_current_one(
    client: Any, tmp_path: Path
) -> None:
    # issue 44: on a stand-in holding the newest protobuf, `pip install mlflow` settled on an
    # old mlflow whose protobuf could not import. On the image's versions (protobuf 3.20.3
    # here) pip takes the mlflow it takes with nothing installed, and its protobuf modules
    # import
    printed = run_mlflow_trainer(client, tmp_path / "root", SKLEARN)
    newest = said(printed, "newest")[0]
    mlflow, _, protobuf = said(printed, "mlflow")
    assert mlflow == newest, printed
    assert "protos import" in printed
    built = tmp_path / "root/stand-ins/scikit-learn-1.0" / virtualenvs.BUILT
    pinned = {p.package: p.version for p in included_packages("scikit-learn", "1.0")}
    assert json.loads(built.read_text())["held"]["protobuf"] == pinned["protobuf"] == "3.20.3"
    assert protobuf  # what pip took for the current mlflow, in the replica's own layer
