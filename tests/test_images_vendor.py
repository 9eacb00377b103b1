"""The copy of trainpool that goes beside a trainer imports on its own, as it must in a
replica whose working directory comes first on ``sys.path`` (the source archive's ``trainpool/``
shadows any installed one)."""

import subprocess
import sys
from pathlib import Path

from trainpool.images.vendor import runtime_entries


def test_the_vendored_runtime_imports_with_nothing_else_of_trainpool(tmp_path: Path) -> None:
    for entry in runtime_entries():
        target = tmp_path / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        with entry.open() as handle:
            target.write_bytes(handle.read())
    code = (
        "import sys; sys.path[:0] = [sys.argv[1]]\n"
        "import trainpool.runtime, trainpool.cluster_env\n"
        "import trainpool.runtime.torch, trainpool.runtime.tf, trainpool.runtime.hypertune\n"
        "assert trainpool.__file__.startswith(sys.argv[1]), trainpool.__file__\n"
    )
    # -I: no user site, no PYTHONPATH, no current directory; -S: no site-packages, so the
    # installed trainpool cannot stand in for a missing copy
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
