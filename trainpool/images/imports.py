"""The files of a package that some Python files need, read from their source, never imported.

The components image carries exactly what the KFP components run: starting from the
components' own files, every ``import``/``from`` of the package (at module level or inside a
function, where the components do theirs), every ``importlib.import_module("...")`` with a
literal name, followed module by module. A module brings its packages' ``__init__.py`` (Python
runs them first), the data beside it (non-Python files and folders that are not packages, as
``templates/`` and ``data/``, which ``importlib.resources`` reads) and any sibling file it names
in a string (``Path(__file__).parent / "check_nccl.py"``). A string that is the name of one of
the package's own top-level modules or packages (``images.vendor`` copies ``"runtime"`` and
``"cluster_env"`` into trainers' contexts from ``Path(trainpool.__file__).parent``) brings that
module or package whole. Nothing is imported to find this, so a module that fails to import on
this machine is still followed.

The same walk as ``tests/test_layers.py`` reads imports; the list it gives is the components
image's build context (the root ``.dockerignore``, which ``trainpool publish`` writes).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path


def _named(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The modules ``node`` imports, as absolute dotted names (relative imports resolved
    against ``module``). ``from X import y`` gives both ``X`` and ``X.y`` (y may be a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            keep = len(parts) - node.level + (1 if is_package else 0)
            base = ".".join(parts[:keep] + ([base] if base else []))
        return [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("import_module", "__import__") and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                return [arg.value]
    return []


def _strings(tree: ast.AST) -> set[str]:
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 200
    }


class _Package:
    """One package's source tree (``root/NAME/...``) and the modules found in it."""

    def __init__(self, root: Path, name: str) -> None:
        self.root, self.name = root, name

    def file_of(self, dotted: str) -> Path | None:
        """The source file of module ``dotted`` (``a.b`` -> ``a/b.py`` or ``a/b/__init__.py``),
        None when it is not a module of this package (an attribute, or another package)."""
        parts = dotted.split(".")
        if parts[0] != self.name:
            return None
        base = self.root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def named_at_top(self, names: set[str]) -> list[Path]:
        """The files of the package's top-level modules and packages that ``names`` name
        (``"runtime"``, ``"errors.py"``): a package brings all its files."""
        top = self.root / self.name
        found: list[Path] = []
        for name in sorted(names):
            if (
                "/" in name
                or name.startswith((".", "_"))
                or not name.isidentifier()
                and not (name.endswith(".py") and name[:-3].isidentifier())
            ):
                continue
            target = top / name
            if target.is_dir() and (target / "__init__.py").is_file():
                found += [p for p in sorted(target.rglob("*")) if p.is_file() and _kept(p)]
            elif name.endswith(".py") and target.is_file():
                found.append(target)
            elif (top / f"{name}.py").is_file():
                found.append(top / f"{name}.py")
        return found

    def module_of(self, path: Path) -> tuple[str, bool]:
        rel = path.relative_to(self.root).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        return ".".join(parts[:-1] if is_package else parts), is_package


def _beside(path: Path, names: set[str]) -> list[Path]:
    """The data a module's folder holds (non-Python files, folders that are not packages)
    and the sibling files it names in a string."""
    here = path.parent
    found = []
    for entry in sorted(here.iterdir()):
        if entry.name == "__pycache__":
            continue
        if entry.is_dir() and not (entry / "__init__.py").exists():
            found += [p for p in sorted(entry.rglob("*")) if p.is_file() and _kept(p)]
        elif entry.is_file() and (entry.suffix != ".py" or entry.name in names) and _kept(entry):
            found.append(entry)
    return found


def _kept(path: Path) -> bool:
    return "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo")


def closure(root: Path, starts: Iterable[Path], package: str) -> list[str]:
    """The files of ``root/package`` that the Python files ``starts`` need, as POSIX paths
    relative to ``root``, sorted. ``starts`` themselves are not listed (unless in the package)."""
    pkg = _Package(root, package)
    needed: set[Path] = set()
    queue = [Path(p) for p in starts]
    seen: set[Path] = set()
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        inside = path.is_relative_to(root / package)
        module, is_package = pkg.module_of(path) if inside else ("", False)
        if inside:
            needed.add(path)
            parent = path.parent
            while parent != root:
                needed.add(parent / "__init__.py")
                queue.append(parent / "__init__.py")
                parent = parent.parent
            names = _strings(tree)
            extra = _beside(path, names) + pkg.named_at_top(names)
            needed.update(extra)
            queue += [p for p in extra if p.suffix == ".py"]
        for node in ast.walk(tree):
            for dotted in _named(node, module, is_package):
                found = pkg.file_of(dotted)
                if found is not None:
                    queue.append(found)
    return sorted(p.relative_to(root).as_posix() for p in needed if p.is_file())
