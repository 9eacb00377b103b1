"""The layer table of docs/contributing/internals.md is the contract: every import obeys it.

An import is any of: ``import``/``from`` statements (module level or inside a function),
``importlib.import_module("trainpool...")``, and Python run from a string
(``python -c "from trainpool.cli import main"``, ``-m trainpool.x``). No two modules
import each other, directly or round a longer circle.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "contributing" / "internals.md"
STDLIB_ONLY = ("errors", "config", "signals", "home", "cluster_env", "runtime", "redirect")
_IN_STRING = re.compile(r"(?:from|import)\s+(trainpool(?:\.\w+)*)|-m\s+(trainpool(?:\.\w+)*)")


def contract() -> dict[str, set[str]]:
    """{layer: layers it may import} from the table under '## Layers'."""
    text = DOC.read_text(encoding="utf-8").split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    names = {n for row in rows for n in re.findall(r"`([a-z_]+)`", row.split("|")[1])}
    allowed: dict[str, set[str]] = {}
    for row in rows:
        cells = row.split("|")
        layers, may = re.findall(r"`([a-z_]+)`", cells[1]), cells[3].strip()
        if may.startswith("everything"):
            granted = names - set(re.findall(r"`([a-z_]+)`", may))
        else:
            granted = set(re.findall(r"`([a-z_]+)`", may))
        for layer in layers:
            allowed[layer] = granted | {layer}
    return allowed


def layer_of(path: Path) -> str:
    if path.is_relative_to(ROOT / "components"):
        return "components"
    parts = path.relative_to(ROOT / "trainpool").parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _strings(node: ast.AST) -> list[tuple[int, str]]:
    """Modules of trainpool named as Python to run: in a string (``from trainpool.x import
    y``, ``-m trainpool.x``), or as the item after ``"-m"`` in a list or tuple (an argv)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.lineno, m.group(1) or m.group(2)) for m in _IN_STRING.finditer(node.value)]
    if isinstance(node, ast.List | ast.Tuple):
        found = []
        for flag, item in zip(node.elts, node.elts[1:], strict=False):
            if (
                isinstance(flag, ast.Constant)
                and flag.value == "-m"
                and isinstance(item, ast.Constant)
                and str(item.value).startswith("trainpool")
            ):
                found.append((item.lineno, str(item.value)))
        return found
    return []


def _import_module_call(node: ast.AST) -> list[tuple[int, str]]:
    """``importlib.import_module(X)`` / ``__import__(X)``: X when it is a literal string."""
    if not isinstance(node, ast.Call):
        return []
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name not in ("import_module", "__import__") or not node.args:
        return []
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [(node.lineno, arg.value)]
    if isinstance(arg, ast.JoinedStr) and arg.values:
        first = arg.values[0]
        if isinstance(first, ast.Constant) and str(first.value).startswith("trainpool"):
            return [(node.lineno, str(first.value).rstrip("."))]
    return []


def imports(path: Path) -> list[tuple[int, str, bool]]:
    """``(line, module, at module level)`` of every absolute import in ``path``, strings of
    Python naming trainpool and ``import_module`` calls included (never at module level)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, f"{node.module}.{a.name}", id(node) in top) for a in node.names]
        found += [(line, module, False) for line, module in _import_module_call(node)]
        if id(node) not in docstrings:
            found += [(line, module, False) for line, module in _strings(node)]
    return list(dict.fromkeys(found))


SOURCES = sorted([*(ROOT / "trainpool").rglob("*.py"), *(ROOT / "components").glob("*.py")])


def test_the_table_names_every_layer() -> None:
    layers = {layer_of(path) for path in SOURCES} - {"__init__", "__main__"}
    assert layers <= set(contract()), layers - set(contract())


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_downward(path: Path) -> None:
    allowed = contract()
    layer = layer_of(path)
    wrong = []
    for line, module, top_level in imports(path):
        parts = module.split(".")
        if parts[0] == "trainpool" and len(parts) > 1 and parts[1] != "__version__":
            if layer in allowed and parts[1] not in allowed[layer]:
                wrong.append(f"line {line}: {module} ({layer} may import {sorted(allowed[layer])})")
        elif layer in STDLIB_ONLY and top_level and parts[0] not in sys.stdlib_module_names:
            if parts[0] != "trainpool":
                wrong.append(f"line {line}: {module} at module level in a standard-library layer")
    assert not wrong, "\n".join(wrong)


def test_the_contract_catches_a_climbing_import(tmp_path: Path) -> None:
    allowed = contract()
    assert "cli" not in allowed["components"] and "cli" not in allowed["emulator"]
    assert allowed["spec"] == {"spec", "errors"} and allowed["cluster_env"] == {
        "cluster_env",
        "errors",
    }
    assert allowed["errors"] == {"errors"} and "kfp_local" in allowed["emulator"]
    assert "vertex" not in allowed["images"] and "emulator" not in allowed["vertex"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """{module: the modules of ours it imports}, each import resolved to the longest module
    name it starts with (``from trainpool.a import b`` is ``trainpool.a.b`` when that is a
    module, else ``trainpool.a``)."""
    modules = {module_name(path): path for path in SOURCES}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for _, imported, _ in imports(path):
            parts = imported.split(".")
            for end in range(len(parts), 0, -1):
                target = ".".join(parts[:end])
                if target in modules:
                    if target != name:
                        graph[name].add(target)
                    break
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                members.append(top)
                if top == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_modules_import_each_other() -> None:
    assert circles(import_graph()) == []


def test_a_circle_and_a_string_import_are_caught(tmp_path: Path) -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    source = tmp_path / "m.py"
    source.write_text(
        '"""Docstring: from trainpool.cli import main is only prose here."""\n'
        "import importlib\n"
        "CODE = 'from trainpool.cli import main; main()'\n"
        "def f():\n"
        "    importlib.import_module('trainpool.emulated.pipeline_run')\n"
        "    return ['python', '-m', 'trainpool.kfp_local.command']\n",
        encoding="utf-8",
    )
    assert sorted(module for _, module, _ in imports(source)) == [
        "importlib",
        "trainpool.cli",
        "trainpool.emulated.pipeline_run",
        "trainpool.kfp_local.command",
    ]
