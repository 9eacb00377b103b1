"""The environment a replica (or a local pipeline task) starts from: a container's, not the host's.

On Vertex a replica's environment is its image's ``ENV``, the pool's ``env`` and
Vertex's variables; nothing of the machine that submitted the job reaches it. Locally a
replica is a host process, and gets only what a process needs to run here, each for a
reason (docs/guides/emulator/replicas.md, "The replica's environment", lists them). The
emulator starts each replica from it, and a local run each pipeline task
(``trainpool.kfp_local.task_env``):

- ``PATH``: the image's, else Docker's default for a container (``DEFAULT_PATH``) with the
  directory of the interpreter that stands in for the image's Python first;
- ``HOME``: a fresh directory per replica under the job's directory (a container's home is
  its own and empty: no ``~/.config/gcloud`` credentials, no user caches);
- ``LANG``: ``C.UTF-8`` (what Google's prebuilt training images set), so Python's
  text I/O is UTF-8 as in the container.

The emulator's ``PYTHONPATH``, virtualenv, credentials (``GOOGLE_APPLICATION_CREDENTIALS``,
cloud SDK settings), ``CUDA_VISIBLE_DEVICES``, ``LD_LIBRARY_PATH``, ``TMPDIR`` and the rest
are not passed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The PATH Docker gives a container whose image sets none."""
LANG = "C.UTF-8"


def interpreter_path(python: str = sys.executable) -> str:
    """``DEFAULT_PATH`` with the directory of ``python`` first (its console scripts too)."""
    return os.pathsep.join([str(Path(python).parent), DEFAULT_PATH])


def base_env(home: Path, image_env: dict[str, str] | None = None) -> dict[str, str]:
    """What a replica starts from: the host minimum, then the image's ``ENV`` over it."""
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": interpreter_path(), "HOME": str(home), "LANG": LANG}
    env.update(image_env or {})
    return env
