"""Copies of trainpool's own files that go into a build context.

Trainers import ``trainpool.runtime`` (standard library only: ``trainpool/__init__.py``,
``trainpool/errors.py``, ``trainpool/cluster_env/``, ``trainpool/runtime/``; a test imports
the copies alone, so a new import of another trainpool module fails there, not on Vertex).
When a trainer's Python files import trainpool, those files go into the context as
``trainpool/`` beside the trainer, so ``COPY . /app`` with ``/app`` on ``PYTHONPATH`` makes
it importable (in a generated Dockerfile as in the examples' own). A Reduction Server build also
carries ``_trainpool_build/check_nccl.py``, which fails the build on NCCL < 2.7.
"""

from __future__ import annotations

import re
from pathlib import Path

import trainpool
from trainpool.images.context import Entry, generated

NCCL_CHECK = "_trainpool_build/check_nccl.py"
_RUNTIME_MODULES = ("__init__.py", "errors.py")
_RUNTIME_PACKAGES = ("cluster_env", "runtime")
_IMPORTS_TRAINPOOL = re.compile(rb"^\s*(?:from|import)\s+trainpool\b", re.MULTILINE)


def imports_trainpool(entries: list[Entry]) -> bool:
    """Whether any Python file of the trainer imports trainpool."""
    for entry in entries:
        if entry.path.endswith(".py") and entry.link is None:
            with entry.open() as handle:
                if _IMPORTS_TRAINPOOL.search(handle.read()):
                    return True
    return False


def runtime_entries() -> list[Entry]:
    """``trainpool/{__init__.py,errors.py,cluster_env/,runtime/}`` from this trainpool."""
    package = Path(trainpool.__file__).parent
    sources = [package / name for name in _RUNTIME_MODULES]
    for name in _RUNTIME_PACKAGES:
        sources += sorted((package / name).rglob("*.py"))
    return [
        generated(f"trainpool/{src.relative_to(package).as_posix()}", src.read_bytes())
        for src in sources
        if "__pycache__" not in src.parts
    ]


def nccl_check_entry() -> Entry:
    """The NCCL version check script, run by the Reduction Server build step."""
    return generated(NCCL_CHECK, (Path(__file__).parent / "check_nccl.py").read_bytes())
