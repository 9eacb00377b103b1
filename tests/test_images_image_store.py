"""The local image store: build a trainer folder, look it up, run it as the emulator would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from google.cloud.aiplatform_v1.types.job_state import JobState

from trainpool.images import builder, image_store
from trainpool.images.image_store_backend import StoreBackend

pytestmark = pytest.mark.timeout(120)
DONE = {JobState.JOB_STATE_SUCCEEDED, JobState.JOB_STATE_FAILED, JobState.JOB_STATE_CANCELLED}

TRAINER = """\
import json, os, sys
import trainpool
print(json.dumps({
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "mode": os.environ.get("MODE"),
    "trainpool": trainpool.__file__,
    "python": sys.prefix,
}))
"""
DOCKERFILE = """\
FROM python:3.11-slim
RUN apt-get update && apt-get install -y curl
WORKDIR /srv
COPY requirements.txt .
RUN pip install --no-cache-dir \\
    -r requirements.txt
COPY . /srv
ENV MODE=local PYTHONPATH=/srv
ENTRYPOINT ["python3", "train.py"]
CMD ["--epochs", "1"]
"""


def trainer(root: Path, dockerfile: str | None = DOCKERFILE) -> Path:
    root.mkdir(parents=True)
    (root / "train.py").write_text(TRAINER)
    (root / "requirements.txt").write_text("torch\n")
    if dockerfile:
        (root / "Dockerfile").write_text(dockerfile)
    return root


def build(src: Path, store: Path) -> builder.BuildResult:
    request = builder.BuildRequest(source_dir=src, repository="local/demo")
    return builder.build(request, StoreBackend(store), log=lambda _: None)


def run(image: image_store.LocalImage, args: list[str] | None = None) -> str:
    done = subprocess.run(
        image.argv(None, args), cwd=image.workdir, env=image.env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_own_dockerfile_image_runs_with_its_settings(tmp_path: Path) -> None:
    result = build(trainer(tmp_path / "src"), tmp_path / "store")
    image = image_store.lookup(result.image_uri, tmp_path / "store")
    assert image is not None
    ctx = image.context_dir
    assert image.env["MODE"] == "local" and image.env["PYTHONPATH"] == str(ctx)
    assert (image.entrypoint, image.cmd, image.workdir) == (
        ["python3", "train.py"],
        ["--epochs", "1"],
        ctx,
    )
    assert image.not_executed == ["apt-get update && apt-get install -y curl"]
    assert result.notes == [
        "local image store: only `pip install -r` of the image's requirements ran, in a "
        "virtualenv over this machine's packages; RUN steps NOT executed: "
        "apt-get update && apt-get install -y curl"
    ]
    out = json.loads(run(image))
    assert out == {
        "argv": ["--epochs", "1"],
        "cwd": str(ctx),
        "mode": "local",
        "trainpool": str(ctx / "trainpool" / "__init__.py"),
        "python": str(ctx.parent / "venv"),
    }
    assert json.loads(run(image, ["--epochs", "3"]))["argv"] == ["--epochs", "3"]


def test_generated_dockerfile_image_and_cache(tmp_path: Path) -> None:
    src = trainer(tmp_path / "src", dockerfile=None)
    first = build(src, tmp_path / "store")
    second = build(src, tmp_path / "store")
    assert (first.cached, second.cached, first.dockerfile) == (False, True, "generated")
    assert (
        first.image_uri
        == second.image_uri
        == (f"local/demo:ctx-{first.digest[:20]}@sha256:{first.digest}")
    )
    by_tag = image_store.lookup(f"local/demo:ctx-{first.digest[:20]}", tmp_path / "store")
    assert by_tag is not None and by_tag.argv() == [str(by_tag.python), "train.py"]
    (src / "train.py").write_text(TRAINER + "# changed\n")
    third = build(src, tmp_path / "store")
    assert (third.cached, third.digest != first.digest) == (False, True)


def test_unknown_or_malformed_images_are_not_found(tmp_path: Path) -> None:
    assert image_store.lookup("local/none:latest", tmp_path) is None
    assert image_store.lookup("local/none@sha256:" + "0" * 64, tmp_path) is None
    assert image_store.lookup("Not An Image", tmp_path) is None


def test_job_command_and_args_override_like_a_container(tmp_path: Path) -> None:
    result = build(trainer(tmp_path / "src"), tmp_path / "store")
    image = image_store.lookup(result.image_uri, tmp_path / "store")
    assert image is not None
    assert image.argv(["python", "-m", "x"], ["--a"]) == [str(image.python), "-m", "x", "--a"]
    assert image.argv(["/bin/echo"]) == ["/bin/echo"]
    assert image.argv(None, ["--b"]) == [str(image.python), "train.py", "--b"]


def test_a_tag_is_put_on_the_image_as_docker_build_t_does(tmp_path: Path) -> None:
    src = trainer(tmp_path / "src")
    request = builder.BuildRequest(source_dir=src, repository="local/demo", tag="latest")
    first = builder.build(request, StoreBackend(tmp_path / "store"), log=lambda _: None)
    assert first.image_uri == f"local/demo:latest@sha256:{first.digest}"
    assert first.tag == "latest"
    found = image_store.lookup("local/demo:latest", tmp_path / "store")
    assert found is not None and found.digest == first.digest
    assert image_store.lookup("local/demo", tmp_path / "store") == found  # no tag: latest
    assert image_store.lookup(f"local/demo:ctx-{first.digest[:20]}", tmp_path / "store") == found
    # a changed folder built with the same tag moves the tag; a cached build tags it too
    (src / "train.py").write_text(TRAINER + "# changed\n")
    second = builder.build(request, StoreBackend(tmp_path / "store"), log=lambda _: None)
    moved = image_store.lookup("local/demo:latest", tmp_path / "store")
    assert moved is not None and moved.digest == second.digest != first.digest
    (src / "train.py").write_text(TRAINER)
    again = builder.build(request, StoreBackend(tmp_path / "store"), log=lambda _: None)
    back = image_store.lookup("local/demo:latest", tmp_path / "store")
    assert again.cached and back is not None and back.digest == first.digest


def test_a_digest_in_the_image_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as err:
        builder.target("local/demo@sha256:" + "0" * 64)
    assert str(err.value).startswith("image_uri: 'local/demo@sha256:000")
    assert "accepted: REPOSITORY or REPOSITORY:TAG" in str(err.value)
    assert builder.target("local/demo:v1") == ("local/demo", "v1")
    assert builder.target("localhost:5000/demo") == ("localhost:5000/demo", "")


@pytest.mark.slow
def test_pytorch_example_image_runs_as_a_three_replica_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trainpool.emulator as emulator
    from trainpool.vertex.clients import job_client

    example = Path(__file__).resolve().parents[1] / "examples" / "pytorch_ddp"
    root = tmp_path / "home"
    cli = "from trainpool.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", cli, "build-image", str(example), "--local", "--json"],
        env={**os.environ, "TRAINPOOL_HOME": str(root)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    image_uri = json.loads(done.stdout)["imageUri"]
    assert image_uri.startswith("local/pytorch-ddp:ctx-")
    with emulator.start(root) as emu:
        monkeypatch.setenv("VERTEX_AI_EMULATOR_HOST", emu.address)
        client = job_client("us-central1")
        pools = [
            {
                "replica_count": n,
                "machine_spec": {"machine_type": "n1-standard-4"},
                "container_spec": {"image_uri": image_uri, "args": ["--epochs=1"]},
            }
            for n in (1, 2)
        ]
        spec = {
            "worker_pool_specs": pools,
            "base_output_directory": {"output_uri_prefix": "gs://bkt/ddp"},
        }
        job = client.create_custom_job(
            parent="projects/demo/locations/us-central1",
            custom_job={"display_name": "ddp", "job_spec": spec},
        )
        deadline = time.monotonic() + 90
        while (got := client.get_custom_job(name=job.name)).state not in DONE:
            assert time.monotonic() < deadline, f"{job.name} still {got.state.name}"
            time.sleep(0.2)
    assert got.state == JobState.JOB_STATE_SUCCEEDED, got.error
    assert (root / "gcs/bkt/ddp/model/model.pt").is_file()
    job_dir = root / "jobs" / job.name.rsplit("/", 1)[-1]
    for rank, name in enumerate(["workerpool0-0", "workerpool1-0", "workerpool1-1"]):
        log = (job_dir / f"{name}.log").read_text()
        assert f"{name} rank {rank}/3 epoch 1" in log


def test_concurrent_builds_of_one_context_share_one_image(tmp_path: Path) -> None:
    # Two pipeline runs (or two CreateBuilds on the emulator) may build the same
    # context at once: each must end with a whole image, none may remove the
    # other's half-made one, and tagging the same name at once must not fail.
    from concurrent.futures import ThreadPoolExecutor

    src = trainer(tmp_path / "src", dockerfile=None)
    (src / "requirements.txt").write_text("")
    store = tmp_path / "store"
    ctx, _ = builder.prepare(builder.BuildRequest(source_dir=src, repository="local/demo"))
    names = ["local/demo:same", "local/demo:same", "local/demo:other", "local/demo:same"]
    with ThreadPoolExecutor(len(names)) as pool:
        done = list(pool.map(lambda name: image_store.add(ctx, store, [name]), names))
    assert done == [[], [], [], []]
    for name in set(names):
        image = image_store.lookup(name, store)
        assert image is not None and image.digest == ctx.digest
        assert image.python.exists()
    leftovers = [p.name for p in (store / "images").iterdir() if p.name.startswith(".")]
    assert leftovers == []
    assert sorted(p.name for p in (store / "images" / "refs").iterdir()) == sorted(
        {"local%2Fdemo%3Asame", "local%2Fdemo%3Aother"}
    )


def test_env_path_that_extends_path_keeps_the_hosts_path(tmp_path: Path) -> None:
    # `ENV PATH=/x:$PATH` is the usual way to extend PATH; $PATH is the base image's,
    # which the host's stands in for. Expanded to "" it left only /srv/bin, so a
    # replica could start no host program (sh, torchrun, nvidia-smi).
    import shutil

    dockerfile = DOCKERFILE.replace("ENV MODE=local", 'ENV PATH="/srv/bin:${PATH}" MODE=local')
    result = build(trainer(tmp_path / "src", dockerfile), tmp_path / "store")
    image = image_store.lookup(result.image_uri, tmp_path / "store")
    assert image is not None
    entries = image.env["PATH"].split(os.pathsep)
    assert entries[:2] == [str(image.python.parent), str(image.context_dir / "bin")]
    assert entries[2:] == os.environ["PATH"].split(os.pathsep)
    assert shutil.which("sh", path=image.env["PATH"]) is not None
    assert json.loads(run(image))["mode"] == "local"


def _other_base_python() -> str | None:
    """A Python 3 other than the base of the one running the tests, same minor version."""
    import glob

    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in [
        f"/usr/bin/python{version}",
        *glob.glob(f"/root/.pyenv/versions/{version}*/bin/python3"),
    ]:
        if not os.path.exists(candidate):
            continue
        base = subprocess.run(
            [candidate, "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True
        ).stdout.strip()
        if base and base != sys.base_prefix:
            return candidate
    return None


def test_an_image_built_from_a_virtualenv_sees_that_virtualenvs_packages(tmp_path: Path) -> None:
    base = _other_base_python()
    if base is None:
        pytest.skip("needs a second Python interpreter of the same minor version")
    venv = tmp_path / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "only_in_venv.py").write_text("WHERE = 'the venv'\n")
    folder = tmp_path / "trainer"
    folder.mkdir()
    (folder / "Dockerfile").write_text(
        'FROM python:3.11\nCMD ["python", "-c", "import only_in_venv; print(only_in_venv.WHERE)"]\n'
    )
    build = (
        "import sys; from pathlib import Path; from trainpool.images import context, image_store; "
        "ctx = context.BuildContext.of(context.collect(Path(sys.argv[1])), {}); "
        "image_store.add(ctx, Path(sys.argv[2]), ['local/venv-test:1'])"
    )
    root = tmp_path / "root"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    subprocess.run(
        [str(venv / "bin" / "python"), "-c", build, str(folder), str(root)], env=env, check=True
    )
    image = image_store.lookup("local/venv-test:1", root)
    assert image is not None
    done = subprocess.run(
        image.argv(), env=image.env, cwd=image.workdir, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "the venv", done.stderr


@pytest.mark.parametrize(
    ("text", "installs"),
    [
        ("", False),
        ("\n\n   \n", False),
        ("# torch comes with the image\n  # indented comment\n", False),
        ("\\\n# a lone continuation\n", False),
        ("torch\n", True),
        ("# pinned below\ntorch==2.13.0  # the CPU build\n", True),
        ("-r other.txt\n", True),
        ("--index-url https://example.com/simple\n", True),
        ("pkg#egg=x\n", True),  # '#' not after whitespace is no comment in pip's rules
    ],
)
def test_a_requirements_file_of_comments_only_starts_no_pip(
    tmp_path: Path, text: str, installs: bool
) -> None:
    """pip (two interpreter starts with ``--python``) runs only for a file that names
    something: the PyTorch example's requirements.txt is comments only."""
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    assert image_store._installs_something(path) is installs


def test_the_pytorch_examples_requirements_install_nothing() -> None:
    example = Path(__file__).resolve().parents[1] / "examples" / "pytorch_ddp"
    assert not image_store._installs_something(example / "requirements.txt")
