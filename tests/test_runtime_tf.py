"""runtime.tf: the MultiWorkerMirroredStrategy chief/non-chief save rule (no TensorFlow needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainpool.runtime.tf import is_chief, write_path


@pytest.mark.parametrize(
    ("task_type", "task_id", "has_chief", "chief"),
    [
        ("chief", 0, True, True),
        ("master", 0, True, True),
        ("worker", 0, True, False),
        ("worker", 0, False, True),
        ("worker", 1, False, False),
        (None, None, False, True),
        ("evaluator", 0, True, False),
    ],
)
def test_is_chief(task_type: str | None, task_id: int | None, has_chief: bool, chief: bool) -> None:
    assert is_chief(task_type, task_id, has_chief) is chief


def test_non_chief_tasks_write_to_their_own_temp_dirs(tmp_path: Path) -> None:
    target = str(tmp_path / "model" / "model.keras")
    assert write_path(target, "chief", 0) == target
    paths = {write_path(target, "worker", i) for i in range(3)}
    assert paths == {
        str(tmp_path / "model" / f"workertemp_worker_{i}" / "model.keras") for i in range(3)
    }
    assert all(Path(p).parent.is_dir() for p in paths)
