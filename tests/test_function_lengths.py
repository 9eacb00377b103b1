"""No function of the emulator is over 60 lines (issue 39: a service's handler builds its
method table; its methods, and long procedures' steps, are functions of their own), unless
the line before its ``def`` (or its first decorator) says why, in a comment starting
``# long:``. Measured as ``ast`` sees it: from the ``def`` line to the last line of its body.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 60


def long_functions(folder: Path, base: Path = ROOT) -> list[str]:
    """``path:line name (N lines)`` of every function under ``folder`` over :data:`LIMIT`
    without its why, paths relative to ``base``."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            said = first >= 2 and lines[first - 2].strip().startswith("# long:")
            if length > LIMIT and not said:
                where = path.relative_to(base)
                found.append(f"{where}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_of_the_emulator_is_over_60_lines_without_saying_why() -> None:
    assert long_functions(ROOT / "trainpool" / "emulator") == []


def test_the_measure_finds_a_long_function_and_reads_its_why(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n")
    (tmp_path / "said.py").write_text(
        f"# long: a table that reads best whole\ndef said():\n{body}\n"
    )
    (tmp_path / "short.py").write_text("def short():\n    return 1\n")
    assert long_functions(tmp_path, tmp_path) == [f"long.py:1 long ({LIMIT + 1} lines)"]
