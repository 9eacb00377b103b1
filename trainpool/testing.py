"""An emulated Vertex AI for a user's own test suite, like moto's ``mock_aws`` for boto3.

With trainpool installed, pytest finds this plugin by itself (the ``pytest11`` entry point
of trainpool's distribution); a test asks for the ``vertex_emulator`` fixture and uses the
Vertex AI SDK, the gapic clients, google-cloud-storage or GCPC's launchers as it would
against Google Cloud, with no import of trainpool::

    from google.cloud import aiplatform

    def test_training_job_succeeds(vertex_emulator):
        aiplatform.init(project="my-project", location="us-central1",
                        staging_bucket="gs://my-bucket")
        ...

Each test gets a fresh emulator on a store of its own (with its Cloud Storage door), and
every Google client in the test's process, and in the processes it starts, talks to it
(:mod:`trainpool.redirect`). Outside pytest, :func:`emulated_vertex` does the same as a
context manager. Both yield the :class:`trainpool.emulator.Emulator` (``.root``,
``.address``, ``.storage_address``, ``.preempt(name)``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PROJECT = "test-project"


@contextlib.contextmanager
def emulated_vertex(root: str | Path, project: str = PROJECT) -> Iterator[Any]:
    """An emulator on ``root`` and this process's Google clients pointed at it, for the block;
    the environment is restored after it. (Imported here: a pytest session of a project that
    installs trainpool without its emulator extra loads this plugin too.)"""
    from trainpool import emulator, redirect
    from trainpool.config import HOME_ENV

    with emulator.start(root, storage=True) as running:
        env = redirect.served_environment(running.address, running.served, project=project, base={})
        env[HOME_ENV] = str(running.root)
        saved = {key: os.environ.get(key) for key in env}
        os.environ.update(env)
        redirect.install()
        _forget_the_sdks_globals()
        try:
            yield running
        finally:
            _forget_the_sdks_globals()
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _forget_the_sdks_globals() -> None:
    """The Vertex AI SDK keeps ``aiplatform.init``'s settings and the current experiment and
    run in globals of its process (``initializer.global_config``,
    ``metadata._experiment_tracker``), with clients bound to the emulator they were made
    for: each test starts from none, as a new process would (moto's ``mock_aws`` does the
    same for boto3's state)."""
    import sys

    initializer = sys.modules.get("google.cloud.aiplatform.initializer")
    if initializer is not None:
        initializer.global_config.__init__()  # type: ignore[misc]
    metadata = sys.modules.get("google.cloud.aiplatform.metadata.metadata")
    if metadata is not None:
        metadata._experiment_tracker.reset()


@pytest.fixture
def vertex_emulator(tmp_path: Path) -> Iterator[Any]:
    """A fresh Vertex AI emulator for this test, every Google client pointed at it."""
    with emulated_vertex(tmp_path / "vertex-emulator") as running:
        yield running
