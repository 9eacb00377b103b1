"""Compile every component and pipeline to checked-in YAML, reproducibly.

KFP writes the YAML body with sorted keys, but its ``# Inputs:`` header prints
dict defaults in the order of a protobuf Struct map, which changes from one
process to the next (``PYTHONHASHSEED`` alone does not fix it). The compile
runs in a child process with ``PYTHONHASHSEED=0`` and then rewrites each
header default with sorted keys, so the output is byte-identical every time.
"""

from __future__ import annotations

import ast
import filecmp
import importlib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Target:
    module: str  # e.g. "components.plan_cluster"
    attr: str  # the component or pipeline function in that module
    output: str  # path relative to the project root


TARGETS: tuple[Target, ...] = (
    Target("components.plan_cluster", "plan_cluster", "component_specs/plan_cluster.yaml"),
    Target(
        "components.size_reduction_server",
        "size_reduction_server",
        "component_specs/size_reduction_server.yaml",
    ),
    Target("components.build_image", "build_image", "component_specs/build_image.yaml"),
    Target(
        "components.launch_custom_job",
        "launch_custom_job",
        "component_specs/launch_custom_job.yaml",
    ),
    Target(
        "components.hyperparameter_sweep",
        "hyperparameter_sweep",
        "component_specs/hyperparameter_sweep.yaml",
    ),
    Target(
        "pipelines.distributed_training",
        "distributed_training",
        "pipelines/distributed_training.yaml",
    ),
)


def project_root(start: Path | None = None) -> Path:
    """The trainpool source tree: the nearest folder holding ``component_specs/``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "component_specs").is_dir() and (folder / "components").is_dir():
            return folder
    raise FileNotFoundError(
        f"no trainpool source tree at or above {here}: expected folders "
        "'components/' and 'component_specs/' (run from a trainpool checkout)"
    )


_HEADER_DEFAULT = re.compile(r"^(#.*\[Default: )(.*)(\])$")


def _canonical(value: object) -> str:
    """``repr`` with dict keys sorted, recursively."""
    if isinstance(value, dict):
        items = ", ".join(f"{k!r}: {_canonical(v)}" for k, v in sorted(value.items()))
        return "{" + items + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_canonical(v) for v in value) + "]"
    return repr(value)


def canonical_header(text: str) -> str:
    """``text`` with every ``[Default: ...]`` of the leading comment block key-sorted."""
    lines = text.split("\n")
    for number, line in enumerate(lines):
        if not line.startswith("#"):
            break
        match = _HEADER_DEFAULT.match(line)
        if match:
            try:
                value = ast.literal_eval(match.group(2))
            except (ValueError, SyntaxError):
                continue
            lines[number] = match.group(1) + _canonical(value) + match.group(3)
    return "\n".join(lines)


def _compile_here(root: Path, out_dir: Path) -> None:
    """Compile in this process (called in the child with a fixed hash seed)."""
    from kfp import compiler

    sys.path.insert(0, str(root))
    for target in TARGETS:
        func = getattr(importlib.import_module(target.module), target.attr)
        dest = out_dir / target.output
        dest.parent.mkdir(parents=True, exist_ok=True)
        compiler.Compiler().compile(func, str(dest))
        dest.write_text(canonical_header(dest.read_text(encoding="utf-8")), encoding="utf-8")


def compile_to(root: Path, out_dir: Path) -> list[Path]:
    """Compile every target of ``root`` into ``out_dir``; return the written files."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    code = "import sys; from pathlib import Path; from trainpool.compiling import _compile_here;"
    code += " _compile_here(Path(sys.argv[1]), Path(sys.argv[2]))"
    subprocess.run(
        [sys.executable, "-c", code, str(root), str(out_dir)], env=env, check=True, cwd=root
    )
    return [out_dir / t.output for t in TARGETS]


def compile_all(root: Path) -> list[Path]:
    """Write every compiled file in place; return their paths."""
    return compile_to(root, root)


def stale_files(root: Path) -> list[str]:
    """Checked-in compiled files that differ from a fresh compile (or are missing)."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = compile_to(root, Path(tmp))
        stale = []
        for path in fresh:
            rel = path.relative_to(tmp)
            checked_in = root / rel
            if not checked_in.exists() or not filecmp.cmp(path, checked_in, shallow=False):
                stale.append(str(rel))
        return stale
