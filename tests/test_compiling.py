"""compiling: the targets come from [tool.trainpool.compile], not from trainpool's own layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainpool import compiling

COMPONENT = """
from kfp import dsl


@dsl.component(base_image="python:3.11")
def double(x: int) -> int:
    return 2 * x
"""

PIPELINE = """
from kfp import dsl

from steps.double import double


@dsl.pipeline(name="twice")
def twice(x: int = 1) -> int:
    return double(x=double(x=x).output).output
"""


def _project(root: Path) -> Path:
    (root / "steps").mkdir(parents=True)
    (root / "steps" / "double.py").write_text(COMPONENT)
    (root / "flows").mkdir()
    (root / "flows" / "twice.py").write_text(PIPELINE)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "other"\n\n[tool.trainpool.compile]\nsteps = "specs"\nflows = "flows"\n'
    )
    return root


def test_a_project_of_another_layout_compiles_what_it_defines(tmp_path: Path) -> None:
    root = _project(tmp_path / "repo")
    assert compiling.project_root(root / "steps") == root.resolve()
    written = compiling.compile_all(root)
    assert sorted(str(p.relative_to(root)) for p in written) == [
        "flows/twice.yaml",
        "specs/double.yaml",
    ]  # the pipeline module's imported `double` is compiled once, where it is defined
    assert compiling.stale_files(root) == []
    (root / "specs" / "double.yaml").write_text("changed\n")
    (root / "specs" / "removed.yaml").write_text("old\n")
    assert compiling.stale_files(root) == [
        "specs/double.yaml",
        "specs/removed.yaml (no component or pipeline compiles to it)",
    ]


def test_a_file_written_by_another_kfp_patch_is_fresh_and_said_once(tmp_path: Path) -> None:
    """Only the compiler's stamp (``sdkVersion``) differs: fresh, named as another kfp's; any
    other difference beside it is stale, as before (kfp's own compiler tests drop the stamp:
    kubeflow/pipelines sdk/python/kfp/compiler/compiler_test.py)."""
    root = _project(tmp_path / "repo")
    compiling.compile_all(root)
    spec = root / "specs" / "double.yaml"
    text = spec.read_text()
    stamp = next(line for line in text.splitlines() if line.startswith("sdkVersion: kfp-"))
    spec.write_text(text.replace(stamp, "sdkVersion: kfp-2.17.3"))
    found = compiling.check_compiled(root)
    assert found.stale == [] and found.other_kfp == {"specs/double.yaml": "kfp-2.17.3"}
    spec.write_text(text.replace(stamp, "sdkVersion: kfp-2.17.3").replace("double", "triple"))
    assert compiling.check_compiled(root).stale == ["specs/double.yaml"]


def test_a_folder_without_the_table_is_no_project(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    with pytest.raises(FileNotFoundError, match=r"\[tool.trainpool.compile\]"):
        compiling.project_root(tmp_path)


def test_the_component_signatures_in_internals_are_the_codes() -> None:
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "contributing" / "internals.md").read_text(encoding="utf-8")
    signatures = compiling.component_signatures(root / "components")
    assert len(signatures) == len(list((root / "components").glob("[a-z]*.py")))
    assert compiling.with_signatures(page, signatures) == page, (
        "docs/contributing/internals.md lists other component signatures than components/ defines: "
        "run `python3 scripts/signatures.py`"
    )


def test_a_changed_parameter_makes_the_signatures_differ(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text(
        "from kfp import dsl\n\n@dsl.component(base_image='x')\n"
        "def c(a: int, b: str = 'x') -> str:\n    return b\n",
        encoding="utf-8",
    )
    page = "intro\n" + compiling.SIGNATURES_BEGIN + "\nold\n" + compiling.SIGNATURES_END + "\n"
    written = compiling.with_signatures(page, compiling.component_signatures(tmp_path))
    assert "c(a: int, b: str='x') -> str" in written and "old" not in written
