"""The recipe of trainpool's components image's dependencies (no engine needed): what the root
Dockerfile, pyproject.toml and constraints.txt say, and a refusal naming what is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from trainpool.emulator.pipeline_jobs import components_image
from trainpool.images import image_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # the project's own fallback
    import tomli as tomllib

PROJECT = Path(__file__).resolve().parents[1]


def test_the_recipe_is_the_root_dockerfiles_base_with_trainpools_pinned_requirements() -> None:
    found = components_image.recipe()
    assert found.base == image_config.base_images((PROJECT / "Dockerfile").read_text())[-1]
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text())
    assert list(found.requirements) == pyproject["project"]["dependencies"]
    assert found.constraints == (PROJECT / "constraints.txt").read_text()
    text = found.dockerfile()
    assert f"\nFROM {found.base}\n" in text
    assert "-c /opt/trainpool/constraints.txt -r /opt/trainpool/requirements.txt" in text
    assert found.tag.startswith(f"{components_image.REPOSITORY}:")


def test_the_tag_changes_with_the_constraints_and_only_then(tmp_path: Path) -> None:
    package = copy_project(tmp_path)
    first = components_image.recipe(package)
    assert components_image.recipe(package).tag == first.tag
    (package / "helper.py").write_text("# an edit to trainpool itself\n")
    assert components_image.recipe(package).tag == first.tag  # bound, not built in
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(constraints.read_text() + "extra-pin==1.0\n")
    assert components_image.recipe(package).tag != first.tag


def test_a_trainpool_with_no_checkout_around_it_has_no_recipe(tmp_path: Path) -> None:
    package = copy_project(tmp_path)
    (tmp_path / "constraints.txt").unlink()
    (tmp_path / "Dockerfile").unlink()
    with pytest.raises(components_image.NoRecipe, match=r"no Dockerfile, constraints\.txt"):
        components_image.recipe(package)


def copy_project(folder: Path) -> Path:
    """The three files of the recipe beside an empty ``trainpool`` package in ``folder``."""
    for name in ("Dockerfile", "pyproject.toml", "constraints.txt"):
        (folder / name).write_text((PROJECT / name).read_text())
    package = folder / "trainpool"
    package.mkdir()
    (package / "__init__.py").write_text("")
    return package
