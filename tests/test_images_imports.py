"""What the components image carries: the trainpool files the components import, followed
import by import from source, and nothing of the emulator, the CLI, kfp.local's runner or the
redirect (trainpool.images.imports, trainpool.compiling.components_image_files)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from trainpool import compiling
from trainpool.images import imports

ROOT = Path(__file__).resolve().parents[1]


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_every_kind_of_import_is_followed_and_nothing_else(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "start.py": "import pkg.a\n",
            "pkg/__init__.py": "",
            "pkg/a.py": "def f():\n    from pkg.sub import b\n",
            "pkg/sub/__init__.py": "from . import c\n",
            "pkg/sub/b.py": "import importlib\nimportlib.import_module('pkg.d')\n",
            "pkg/sub/c.py": "from ..e import name_in_e\n",
            "pkg/d.py": 'from pathlib import Path\nSCRIPT = Path(__file__).parent / "tool.py"\n',
            "pkg/tool.py": "import pkg.tooldep\n",
            "pkg/tooldep.py": "",
            "pkg/e.py": "name_in_e = 1\nRUNTIME = ('runtime',)\n",
            "pkg/runtime/__init__.py": "",
            "pkg/runtime/r.py": "",
            "pkg/data/table.csv": "a,b\n",
            "pkg/unused.py": "import pkg.a\n",
            "pkg/unusedpkg/__init__.py": "",
            "pkg/unusedpkg/x.py": "",
        },
    )
    found = imports.closure(tmp_path, [tmp_path / "start.py"], "pkg")
    assert found == [
        "pkg/__init__.py",
        "pkg/a.py",
        "pkg/d.py",
        "pkg/data/table.csv",  # data beside a module (importlib.resources)
        "pkg/e.py",  # a relative import from a package's __init__
        "pkg/runtime/__init__.py",  # a top-level package named in a string
        "pkg/runtime/r.py",
        "pkg/sub/__init__.py",
        "pkg/sub/b.py",  # imported inside a function
        "pkg/sub/c.py",
        "pkg/tool.py",  # a sibling named in a string, and what it imports
        "pkg/tooldep.py",
    ]


def test_the_components_image_holds_what_the_components_run_and_not_the_emulator() -> None:
    files = compiling.components_image_files(ROOT)
    assert files[:2] == ["pyproject.toml", "constraints.txt"]
    top = {f.split("/")[1] for f in files if f.startswith("trainpool/")}
    # what the components run: planning, images, launching, sweeps and the report's charts
    for needed in ("vertex", "plan", "spec", "images", "cluster_env", "catalog", "reports"):
        assert needed in top, needed
    for outside in ("emulator", "cli", "kfp_local", "redirect", "emulated", "testing.py"):
        assert outside not in top, outside
    assert "trainpool/compiling.py" not in files
    # images.vendor copies the runtime into trainers' contexts from the installed package
    assert "trainpool/runtime/__init__.py" in files
    assert "trainpool/images/check_nccl.py" in files  # the Reduction Server build's check
    assert "trainpool/catalog/data/machines.csv" in files
    # the packages prebuilt images ship: only the emulator's stand-ins read that table, so an
    # edit of it leaves the components image as it is
    assert not any(f.startswith("trainpool/catalog/included/") for f in files)


def test_the_checked_in_dockerignore_is_the_components_imports() -> None:
    assert (ROOT / ".dockerignore").read_text() == compiling.dockerignore_text(ROOT)


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The components image's files alone, as its install sees them."""
    out = tmp_path_factory.mktemp("context")
    for rel in compiling.components_image_files(ROOT):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes((ROOT / rel).read_bytes())
    (out / "README.md").write_text("stub, as the Dockerfile writes it\n")
    return out


def test_every_module_of_the_image_imports_with_only_the_images_files(staged: Path) -> None:
    modules = [
        rel.removesuffix("/__init__.py").removesuffix(".py").replace("/", ".")
        for rel in compiling.components_image_files(ROOT)
        if rel.endswith(".py") and rel != "trainpool/images/check_nccl.py"
    ]
    code = (
        "import importlib, sys, trainpool\n"
        "assert trainpool.__file__.startswith(sys.argv[1]), trainpool.__file__\n"
        "for name in sys.argv[2:]:\n"
        "    importlib.import_module(name)\n"
        "print(len(sys.argv) - 2)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(staged), *modules],
        cwd=staged,
        env={**os.environ, "PYTHONPATH": str(staged)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout) == len(modules) > 80


def test_the_image_installs_exactly_the_listed_files(staged: Path, tmp_path: Path) -> None:
    """The Dockerfile's `pip install .` of the context: the wheel it builds holds the
    components' trainpool files and no other."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(tmp_path), str(staged)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = tmp_path.glob("trainpool-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        installed = {n for n in archive.namelist() if n.startswith("trainpool/")}
    listed = {f for f in compiling.components_image_files(ROOT) if f.startswith("trainpool/")}
    # package data is what pyproject.toml declares of it (the catalog's CSVs, the templates)
    assert installed == listed
