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
import json
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_TABLE = ("tool", "trainpool", "compile")


@dataclass(frozen=True)
class Target:
    module: str  # e.g. "components.plan_cluster"
    attr: str  # the component or pipeline function in that module
    output: str  # path relative to the project root


def _config(pyproject: Path) -> dict[str, str] | None:
    """``[tool.trainpool.compile]`` of ``pyproject``: {package: output folder}, or None."""
    if not pyproject.is_file():
        return None
    table: Any = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    for key in CONFIG_TABLE:
        if not isinstance(table, dict) or key not in table:
            return None
        table = table[key]
    if not isinstance(table, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in table.items()
    ):
        raise ValueError(
            f"{pyproject}: [tool.trainpool.compile] must map each package to a folder, "
            'e.g. components = "component_specs"'
        )
    return dict(table)


def project_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` with ``[tool.trainpool.compile]`` in pyproject."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _config(folder / "pyproject.toml") is not None:
            return folder
    raise FileNotFoundError(
        f"no project at or above {here} says what to compile: expected a pyproject.toml with "
        '[tool.trainpool.compile], e.g. components = "component_specs" (package = output folder)'
    )


def targets(root: Path) -> list[Target]:
    """Every component and pipeline defined in the configured packages of ``root``.

    A target is a module-level KFP component or pipeline whose function is defined in
    that module (one imported from elsewhere is compiled where it is defined); it is
    written to ``<folder>/<function name>.yaml``. Imports the packages: call it in the
    compile child, where ``root`` is on ``sys.path``.
    """
    from kfp.dsl.base_component import BaseComponent

    config = _config(root / "pyproject.toml") or {}
    found = []
    for package, folder in sorted(config.items()):
        for info in sorted(pkgutil.iter_modules([str(root / package)]), key=lambda i: i.name):
            module = importlib.import_module(f"{package}.{info.name}")
            for attr, value in sorted(vars(module).items()):
                func = getattr(value, "python_func", None) or getattr(value, "pipeline_func", None)
                if isinstance(value, BaseComponent) and func.__module__ == module.__name__:
                    found.append(Target(module.__name__, attr, f"{folder}/{attr}.yaml"))
    return found


def output_folders(root: Path) -> list[str]:
    """The folders compiled YAML is written to, relative to ``root``."""
    return sorted(set((_config(root / "pyproject.toml") or {}).values()))


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
    """Compile in this process (called in the child with a fixed hash seed); print each output."""
    from kfp import compiler

    sys.path.insert(0, str(root))
    for target in targets(root):
        func = getattr(importlib.import_module(target.module), target.attr)
        dest = out_dir / target.output
        dest.parent.mkdir(parents=True, exist_ok=True)
        compiler.Compiler().compile(func, str(dest))
        dest.write_text(canonical_header(dest.read_text(encoding="utf-8")), encoding="utf-8")
        print(target.output)


def component_signatures(package_dir: Path) -> list[str]:
    """``name(parameters) -> outputs`` of every KFP component in ``package_dir``, as its
    source spells it (read, not imported): what docs/contributing/internals.md lists, so that
    a test can hold the page to the code."""
    found = []
    for path in sorted(package_dir.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            decorators = [ast.unparse(d) for d in node.decorator_list]
            if any(d.split("(")[0] in ("dsl.component", "component") for d in decorators):
                returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
                found.append(f"{node.name}({ast.unparse(node.args)}){returns}")
    return found


SIGNATURES_BEGIN = "<!-- component signatures: generated by scripts/signatures.py -->"
SIGNATURES_END = "<!-- end of component signatures -->"


def with_signatures(page: str, signatures: list[str]) -> str:
    """``page`` with the block between the signature markers replaced by ``signatures``."""
    head, found, rest = page.partition(SIGNATURES_BEGIN)
    if not found:
        raise ValueError(f"the page has no {SIGNATURES_BEGIN!r} marker")
    _, found, tail = rest.partition(SIGNATURES_END)
    if not found:
        raise ValueError(f"the page has no {SIGNATURES_END!r} marker")
    block = "\n```python\n" + "\n".join(signatures) + "\n```\n"
    return head + SIGNATURES_BEGIN + block + SIGNATURES_END + tail


PUBLISHED_IMAGE = "components-image.json"
"""Written by ``trainpool publish``: the components image every compiled task names."""


def published_image(root: Path) -> str:
    """The components image ``trainpool publish`` recorded for ``root``, or "" if none."""
    path = root / PUBLISHED_IMAGE
    if not path.is_file():
        return ""
    record = json.loads(path.read_text(encoding="utf-8"))
    image = record.get("image") if isinstance(record, dict) else None
    if not isinstance(image, str) or not image:
        raise ValueError(f"{path}: no 'image'; accepted: the file `trainpool publish` writes")
    return image


IMAGE_PACKAGE = "trainpool"
IMAGE_INSTALL = ("pyproject.toml", "constraints.txt")
"""Besides the package's files, what the root Dockerfile's install reads."""
DOCKERIGNORE = ".dockerignore"
_DOCKERIGNORE_HEAD = """\
# Generated by `trainpool publish`; `trainpool compile --check` fails when it is stale.
# The components image's build context: the install's files and the files of trainpool that
# the components import, followed import by import (trainpool.images.imports), so an edit to
# the emulator, the CLI, kfp.local's runner or the redirect makes no new image.
*
"""


def components_image_files(root: Path) -> list[str]:
    """The files of ``root`` the components image is built from (besides the Dockerfile):
    the install's (``IMAGE_INSTALL``) and what the configured packages' Python files
    (``[tool.trainpool.compile]``: the components and pipelines) import of trainpool."""
    from trainpool.images import imports

    packages = sorted((_config(root / "pyproject.toml") or {}).keys())
    starts = [p for package in packages for p in sorted((root / package).rglob("*.py"))]
    return [*IMAGE_INSTALL, *imports.closure(root, starts, IMAGE_PACKAGE)]


def dockerignore_text(root: Path) -> str:
    """The root ``.dockerignore`` that keeps exactly :func:`components_image_files`."""
    return _DOCKERIGNORE_HEAD + "".join(f"!{path}\n" for path in components_image_files(root))


def stale_image(root: Path) -> str | None:
    """Why the recorded components image is not one of ``root``'s current sources, or None.

    The image is named by the digest of the root Dockerfile's build context: the install's
    files and the trainpool files the components import (the root ``.dockerignore``, which
    must list exactly those); a change to any of them needs ``trainpool publish`` again. An
    edit elsewhere (the emulator, the CLI) leaves the image as it is.
    """
    path = root / PUBLISHED_IMAGE
    if not path.is_file():
        return None
    ignore = root / DOCKERIGNORE
    written = ignore.read_text(encoding="utf-8") if ignore.is_file() else ""
    if written != dockerignore_text(root):
        return (
            f"{DOCKERIGNORE} (the components image's context is not what the components import "
            "today: run `trainpool publish`)"
        )
    from trainpool.images import builder

    recorded = json.loads(path.read_text(encoding="utf-8")).get("contextDigest", "")
    context, _ = builder.prepare(builder.BuildRequest(source_dir=root, repository="local/x"))
    current = f"sha256:{context.digest}"
    if recorded == current:
        return None
    return (
        f"{PUBLISHED_IMAGE} (the components image was published from sources {recorded[:19]}, "
        f"they are now {current[:19]}: run `trainpool publish`)"
    )


def compile_to(root: Path, out_dir: Path, image: str = "") -> list[Path]:
    """Compile every target of ``root`` into ``out_dir``; return the written files.

    Every task names ``image``, else the image ``trainpool publish`` recorded, else
    ``$TRAINPOOL_COMPONENTS_IMAGE`` or the default of ``trainpool.config``.
    """
    env = dict(os.environ, PYTHONHASHSEED="0")
    chosen = image or published_image(root)
    if chosen:
        env["TRAINPOOL_COMPONENTS_IMAGE"] = chosen
    code = "import sys; from pathlib import Path; from trainpool.compiling import _compile_here;"
    code += " _compile_here(Path(sys.argv[1]), Path(sys.argv[2]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(root), str(out_dir)],
        env=env,
        check=True,
        cwd=root,
        capture_output=True,
        text=True,
    )
    return [out_dir / line for line in done.stdout.splitlines() if line.endswith(".yaml")]


def compile_all(root: Path, image: str = "") -> list[Path]:
    """Write every compiled file in place; return their paths."""
    return compile_to(root, root, image)


_STAMP = re.compile(rb"^sdkVersion: kfp-[^\n]*$", re.M)
"""The compiler's version stamp in a compiled file (kfp's own compiler tests drop it before
comparing: kubeflow/pipelines ``sdk/python/kfp/compiler/compiler_test.py``)."""


def _unstamped(path: Path) -> bytes:
    return _STAMP.sub(b"sdkVersion: kfp", path.read_bytes())


def stamps(path: Path) -> set[str]:
    """The kfp versions stamped in ``path`` (``{"kfp-2.17.0"}``)."""
    return {m.decode().split(": ", 1)[1] for m in _STAMP.findall(path.read_bytes())}


@dataclass(frozen=True)
class Freshness:
    """What a check found: ``stale`` files (and why), and files that differ from a fresh
    compile only in the compiler's version stamp (``other_kfp``: path -> its stamp)."""

    stale: list[str]
    other_kfp: dict[str, str]


def check_compiled(root: Path) -> Freshness:
    """Compile ``root`` afresh and compare with the checked-in files. A file whose only
    difference is the compiler's version stamp (``sdkVersion``: a kfp of another patch
    version wrote it) is fresh, and named in ``other_kfp``; any other difference is stale."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = {str(p.relative_to(tmp)): p for p in compile_to(root, Path(tmp))}
        stale: list[str] = []
        other: dict[str, str] = {}
        for rel, path in sorted(fresh.items()):
            checked_in = root / rel
            if checked_in.exists() and filecmp.cmp(path, checked_in, shallow=False):
                continue
            if checked_in.exists() and _unstamped(path) == _unstamped(checked_in):
                other[rel] = ", ".join(sorted(stamps(checked_in)))
                continue
            stale.append(rel)
        for folder in output_folders(root):
            for leftover in sorted((root / folder).glob("*.yaml")):
                rel = str(leftover.relative_to(root))
                if rel not in fresh:
                    stale.append(f"{rel} (no component or pipeline compiles to it)")
        image = stale_image(root)
        return Freshness(stale + ([image] if image else []), other)


def stale_files(root: Path) -> list[str]:
    """Checked-in compiled files that differ from a fresh compile (beyond the compiler's
    version stamp), are missing, or are left over."""
    return check_compiled(root).stale
