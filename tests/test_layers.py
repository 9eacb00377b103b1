"""The layer table of docs/internals.md is the contract: every import obeys it."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "internals.md"
STDLIB_ONLY = ("config", "signals", "cluster_env", "runtime")


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


def imports(path: Path) -> list[tuple[int, str, bool]]:
    """``(line, module, at module level)`` of every absolute import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "trainpool":
                found += [(node.lineno, f"trainpool.{a.name}", id(node) in top) for a in node.names]
            else:
                found.append((node.lineno, node.module, id(node) in top))
    return found


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
    assert allowed["spec"] == {"spec"} and allowed["cluster_env"] == {"cluster_env"}
    assert "vertex" not in allowed["images"] and "emulator" not in allowed["vertex"]
