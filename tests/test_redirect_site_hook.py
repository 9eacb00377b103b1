"""Google's client hook (``trainpool/redirect/site/sitecustomize.py``) that every replica and
every command under ``trainpool exec`` starts with: it loads no module beyond its own and
what the interpreter's start has loaded already, since each replica pays for what it imports
(``importlib.abc`` alone pulled in ``importlib.resources``, ``pathlib``, ``tempfile`` and
``zipfile``: 16 ms of every start; the figures are on the benchmarks page)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from trainpool.redirect import SITE

SHOW = "import sys, json; print(json.dumps(sorted(sys.modules)))"


def modules(hooked: bool) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if hooked:
        env["PYTHONPATH"] = str(SITE)
    out = subprocess.run(
        [sys.executable, "-c", SHOW], env=env, capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out))


def test_the_hook_loads_nothing_a_start_has_not_loaded_already() -> None:
    added = modules(hooked=True) - modules(hooked=False)
    assert added <= {"sitecustomize"}, sorted(added)
