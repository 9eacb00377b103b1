"""Container stand-ins for Vertex's prebuilt training images and Google's Deep Learning Containers.

Google's samples build their trainers ``FROM`` these images: the TensorFlow
hyperparameter-tuning notebook's Dockerfile starts ``FROM gcr.io/deeplearning-platform-release/
tf2-gpu.2-8``; ``gcloud ai custom-jobs create --local-package-path`` starts from the executor
image named (``us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest``). A user's engine
pulls them; a machine that cannot reach Google's registries (as here) cannot. Where it
cannot, :func:`ensure` builds a stand-in once and tags it with the public name, labelled
as a stand-in (``org.trainpool.stand-in``) with how it differs, a label every image built
``FROM`` it inherits (so a job's log can say it):

- **Python**: the image's own where Debian has it (bullseye 3.9, bookworm 3.11, trixie 3.13:
  :mod:`.debian_bases`), else the nearest that the framework's version supports
  (:data:`MAX_PYTHON`: TensorFlow 2.8 publishes wheels for 3.7 to 3.10, so its images get
  3.9; PyTorch gets 3.11, the Python of this machine's CPU build of torch);
- **the framework** at the image's series, newest patch (``tensorflow-cpu==2.8.*``; its CPU
  build for a GPU image: no GPU is passed here), PyTorch as ``torch==2.13.0``, the CPU
  build this machine's package configuration provides;
- **what trainers rely on** beside it: pandas, and gcsfs, with which pandas reads
  ``gs://`` (Google's PyTorch notebook reads its CSV with ``pd.read_csv("gs://...")`` inside
  ``pytorch-gpu.1-13``, so Google's images hold it: ``reference/containers-here.md``);
  google-cloud-storage; and for Vertex's training images (not the Deep Learning Containers)
  ``cloudml-hypertune``, as the process stand-ins hold it (:mod:`.virtualenvs`). Versions
  are pip's choice under the framework's pin, for the stand-in's Python, not the page's
  list: the job log says so.

Google Cloud Pipeline Components' image (:data:`GCPC`) gets the package at the image's
version, so that a pipeline task running one of GCPC's launchers (``CustomTrainingJobOp``, ...)
is a container of it, as on Vertex AI Pipelines.

The image's own pip installs them from the package index (the base trusts this machine's
CA bundle: :mod:`.debian_bases`), so markers and wheels are the stand-in's Python's; what
must come from this machine (PyTorch's CPU build, packages published as source only) is
made here first and found by ``--find-links`` (:func:`download`).
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trainpool.catalog import prebuilt_image
from trainpool.catalog.included import included_packages
from trainpool.emulator.stand_ins import debian_bases

DLC = re.compile(
    r"^(?:gcr\.io/deeplearning-platform-release|"
    r"[a-z0-9-]+-docker\.pkg\.dev/deeplearning-platform-release/gcr\.io)/"
    r"(?P<kind>tf2|tf|pytorch)-(?P<accelerator>cpu|gpu|tpu)\.(?P<major>\d+)-(?P<minor>\d+)"
    r"(?:\.py(?P<py>\d)(?P<pyminor>\d+))?(?::[\w.-]+)?$"
)
"""Google's Deep Learning Containers of TensorFlow and PyTorch
(https://cloud.google.com/deep-learning-containers/docs/choosing-container: ``tf2-gpu.2-8``,
``pytorch-gpu.1-13``, with an optional ``.py310``), in gcr.io and in Artifact Registry."""
GCPC = re.compile(
    r"^gcr\.io/ml-pipeline/google-cloud-pipeline-components:(?P<version>\d+\.\d+\.\d+)$"
)
"""Google Cloud Pipeline Components' image, which its components name with the package's own
version (``gcr.io/ml-pipeline/google-cloud-pipeline-components:2.22.0``). kubeflow/pipelines
``components/google-cloud/Dockerfile`` builds it ``FROM marketplace.gcr.io/google/ubuntu2404``
(Python 3.12) and ``pip install``s the package: its stand-in holds that package, at that
version, on Python 3.11."""
PYTHONS = {"3.9": "python:3.9-slim", "3.11": "python:3.11-slim", "3.13": "python:3.13-slim"}
MAX_PYTHON = {
    "tensorflow": ((2, 11), "3.9"),
    "scikit-learn": ((1, 0), "3.9"),
    "xgboost": ((1, 6), "3.9"),
}
"""Up to which version of a framework its stand-in gets Python 3.9 (its newest Python with a
Debian suite that the version publishes wheels for); newer versions get 3.11."""
PACKAGES = {
    "tensorflow": "tensorflow-cpu",
    "scikit-learn": "scikit-learn",
    "xgboost": "xgboost",
    "pytorch": "torch",
}
NUMPY_1 = {
    "tensorflow": (2, 17),
    "scikit-learn": (1, 4),
    "xgboost": (2, 0),
    "pytorch": (2, 2),
}
"""Up to which version a framework was built against NumPy 1 (NumPy 2 came with TensorFlow
2.18, scikit-learn 1.4.2, XGBoost 2.1, PyTorch 2.3): its stand-in pins ``numpy<2``, as its
image holds a NumPy 1 (pip would otherwise take NumPy 2, which TensorFlow 2.8 cannot
import: "Unable to convert function return value to a Python type")."""
TORCH = "2.13.0"
BESIDE = ("pandas", "gcsfs", "google-cloud-storage")
SERIES = ("numpy", "pandas", "scikit-learn", "scipy")
"""The packages Google's page lists for an image (``prebuilt_packages.csv``) that its stand-in
holds at that version's series or an older one (pandas 2.2.3 listed: ``pandas<2.3``), not
the newest: a trainer written for the image's pandas is not run on pandas 3. Where that
cannot be installed on the stand-in's Python, the stand-in is built without those bounds,
and its build says so."""
SOURCE_ONLY = ("cloudml-hypertune",)
"""Published as source only: built into a wheel here (pure Python) before the download."""


@dataclass(frozen=True)
class Recipe:
    """How the stand-in of public image ``name`` is made."""

    name: str
    framework: str
    version: str
    python: str
    requirements: tuple[str, ...]
    source_only: tuple[str, ...]
    image_python: str
    """The real image's Python ("" where unknown)."""

    @property
    def base(self) -> str:
        return PYTHONS[self.python]

    @property
    def differs(self) -> str:
        real = f"Python {self.image_python}" if self.image_python else "its Python"
        return (
            f"Debian's Python {self.python} (the image has {real}); "
            f"{' '.join(self.requirements + self.source_only)} at pip's choice for that Python, "
            "CPU builds only; not the image's whole package list"
        )


def _within_series(package: str, version: str) -> str:
    """``pandas<2.3`` for the page's ``pandas 2.2.3``: that series or an older one."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return f"{package}<{major}.{minor + 1}"


def _python_for(framework: str, version: str, image_python: str) -> str:
    if framework == "pytorch":
        return "3.11"  # this machine's CPU build of torch is for CPython 3.11
    if image_python in PYTHONS:
        return image_python
    numbers = tuple(int(p) for p in version.split(".")[:2])
    limit = MAX_PYTHON.get(framework)
    return limit[1] if limit is not None and numbers <= limit[0] else "3.11"


def recipe(name: str) -> Recipe | None:
    """The stand-in recipe of ``name`` (a Vertex prebuilt training image, a Deep Learning
    Container of TensorFlow or PyTorch, or GCPC's image: :data:`GCPC`), or None for any other
    name."""
    gcpc = GCPC.match(name)
    if gcpc is not None:
        return Recipe(
            name=name,
            framework="google-cloud-pipeline-components",
            version=gcpc["version"],
            python="3.11",
            requirements=(f"google-cloud-pipeline-components=={gcpc['version']}",),
            source_only=(),
            image_python="3.12",
        )
    found = prebuilt_image(name)
    extra: tuple[str, ...] = ()
    if found is not None and found.framework in PACKAGES:
        framework, version, image_python = found.framework, found.version, found.python
        extra = SOURCE_ONLY
    else:
        match = DLC.match(name)
        if match is None:
            return None
        framework = "pytorch" if match["kind"] == "pytorch" else "tensorflow"
        version = f"{match['major']}.{match['minor']}"
        image_python = f"{match['py']}.{match['pyminor']}" if match["py"] else ""
    package = PACKAGES[framework]
    pin = f"{package}=={TORCH}" if framework == "pytorch" else f"{package}=={version}.*"
    numbers = tuple(int(p) for p in version.split(".")[:2])
    numpy = ("numpy<2",) if numbers <= NUMPY_1[framework] else ()
    listed = tuple(
        _within_series(p.package, p.version)
        for p in included_packages(framework, version)
        if p.package in SERIES and p.package != package
    )
    beside = tuple(b for b in BESIDE if not any(r.startswith(b + "<") for r in listed))
    return Recipe(
        name=name,
        framework=framework,
        version=version,
        python=_python_for(framework, version, image_python),
        requirements=(pin, *numpy, *listed, *beside),
        source_only=extra,
        image_python=image_python,
    )


def download(found: Recipe, folder: Path, python: str = sys.executable) -> None:
    """The wheels that must come from this machine, in ``folder``: packages published as
    source only, built here (pure Python), and PyTorch's CPU build, which this machine's
    pip configuration provides (the index's torch pulls CUDA). Everything else the image's
    own pip installs from the package index (through the CA bundle the base trusts:
    :mod:`.debian_bases`). What cannot be had raises ``OSError`` with pip's words."""
    folder.mkdir(parents=True, exist_ok=True)
    steps = []
    if found.source_only:
        steps.append(["wheel", "-q", "--no-deps", "-w", str(folder), *found.source_only])
    if found.framework == "pytorch":
        steps.append(
            [
                "download",
                "-q",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(folder),
                f"torch=={TORCH}",
            ]
        )
    for step in steps:
        got = subprocess.run(
            [python, "-m", "pip", *step], capture_output=True, text=True, check=False
        )
        if got.returncode != 0:
            raise OSError(f"pip {' '.join(step)} failed:\n{got.stderr[-3000:]}")


def ensure(client: Any, found: Recipe, log: io.TextIOBase) -> Any:
    """The stand-in of ``found.name`` in the engine of docker-py ``client``, tagged with that
    name: the one it has, else one built now (the Python base first, :func:`debian_bases.
    ensure`), its build's output in ``log``; built again without the page's series bounds
    (:data:`SERIES`) where they cannot be installed, saying so. Raises ``OSError`` when it
    cannot be made."""
    from docker import errors

    with _LOCKS.setdefault(found.name, threading.Lock()):  # two jobs at once build it once
        try:
            return client.images.get(found.name)
        except errors.ImageNotFound:
            pass
        return _ensure(client, found, log)


_LOCKS: dict[str, threading.Lock] = {}


def _ensure(client: Any, found: Recipe, log: io.TextIOBase) -> Any:
    debian_bases.ensure(client, found.base)
    try:
        return _build(client, found, log)
    except OSError as err:
        bounded = [
            r
            for r in found.requirements
            if "<" in r and r.split("<")[0] in SERIES and r != "numpy<2"
        ]
        if not bounded:
            raise
        kept = tuple(r for r in found.requirements if r not in bounded)
        beside = tuple(b for b in BESIDE if b not in kept)
        log.write(
            f"{found.name}: {' '.join(bounded)} (the page's versions) cannot be installed for "
            f"Python {found.python}; building with pip's choice instead ({str(err)[:300]})\n"
        )
        return _build(client, replace(found, requirements=(*kept, *beside)), log)


def _build(client: Any, found: Recipe, log: io.TextIOBase) -> Any:
    from docker import errors

    with tempfile.TemporaryDirectory(prefix="trainpool-prebuilt-") as tmp:
        context = Path(tmp)
        log.write(
            f"{found.name}: not pullable here; building its stand-in: Python {found.python}, "
            f"{' '.join(found.requirements + found.source_only)}\n"
        )
        log.flush()
        download(found, context / "wheels")
        (context / "Dockerfile").write_text(dockerfile(found))
        repository, tag = (
            found.name.rsplit(":", 1) if _tagged(found.name) else (found.name, "latest")
        )
        try:
            image, output = client.images.build(
                path=str(context),
                tag=f"{repository}:{tag}",
                rm=True,
                forcerm=True,
                network_mode="host",  # the index as this machine reaches it
            )
        except errors.BuildError as err:
            shown = "".join(str(c.get("stream", "")) for c in err.build_log)[-3000:]
            raise OSError(
                f"the stand-in of {found.name} could not be built: {err}\n{shown}"
            ) from err
        for chunk in output:
            if "stream" in chunk:
                log.write(str(chunk["stream"]))
    log.write(f"{found.name}: stand-in built ({found.differs})\n")
    return image


def dockerfile(found: Recipe) -> str:
    """The stand-in's Dockerfile. What comes from the package index is one RUN step of its
    own, before anything of this machine is copied in, so that two images of one framework
    version (``tf2-gpu.2-8``, a Deep Learning Container, and ``tf-cpu.2-8``, Vertex's: the
    same requirements) share that layer from the engine's build cache: the second is made in
    seconds. What must come from this machine (:func:`download`: PyTorch's CPU build, packages
    published as source only) is installed after it, from the copied wheels."""
    local = found.framework == "pytorch"  # torch is among the requirements, from the wheels
    indexed = () if local else found.requirements
    rest = (*found.requirements, *found.source_only) if local else found.source_only
    lines = [f"FROM {debian_bases.stand_in_name(found.base)}\n"]
    if indexed:
        names = " ".join(f"'{r}'" for r in indexed)
        lines.append(f"RUN pip install -q --no-cache-dir {names}\n")
    if rest:
        names = " ".join(f"'{r}'" for r in rest)
        lines.append("COPY wheels /tmp/wheels\n")
        lines.append(
            f"RUN pip install -q --no-cache-dir --find-links /tmp/wheels {names}"
            " && rm -rf /tmp/wheels\n"
        )
    lines.append(f'LABEL {debian_bases.LABEL}="{found.name}"\n')
    lines.append(f'LABEL {debian_bases.DIFFERENCE_LABEL}="{found.differs}"\n')
    return "".join(lines)


def _tagged(name: str) -> bool:
    return ":" in name.rsplit("/", 1)[-1]
