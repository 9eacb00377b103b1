"""``trainpool exec [--root DIR] -- COMMAND [ARGS...]``: a command with its clients pointed here.

Like LocalStack's ``awslocal`` or ``opentelemetry-instrument``: COMMAND runs unchanged, with
every Google client it may use pointed at the emulator (:func:`trainpool.redirect.environment`)
that :func:`trainpool.emulated.emulators.emulator_for` chooses (started for the command's
life, with its Cloud Storage door, when none serves the root). The command's exit status
is the exit status (128 + N when signal N killed it, as a shell reports it); SIGTERM,
SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to ``trainpool exec`` are passed on, and Ctrl-C
reaches COMMAND from the terminal as it would without ``trainpool exec``.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from trainpool import config, signals
from trainpool.emulated.emulators import emulator_for
from trainpool.errors import InputError
from trainpool.redirect import served_environment

FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def run(argv: Sequence[str], root: Path | None = None, project: str = "") -> int:
    """Run ``argv`` against the emulator; its exit status."""
    if not argv:
        raise InputError.of("COMMAND", "nothing to run; accepted: trainpool exec -- COMMAND [ARGS]")
    with emulator_for(root) as (address, served):
        if not served.storage_address:
            print(
                f"trainpool exec: the emulator at {address} serves no Cloud Storage door, so "
                "gs:// clients in COMMAND cannot reach the local store (restart it with "
                "`trainpool emulator` without --no-storage)",
                file=sys.stderr,
            )
        env = served_environment(address, served, project=project)
        env[config.HOME_ENV] = str(served.home.root)
        try:
            child = subprocess.Popen(list(argv), env=env)
        except OSError as err:
            print(f"trainpool exec: {argv[0]}: {err.strerror}", file=sys.stderr)
            return 127 if isinstance(err, FileNotFoundError) else 126
        return wait_forwarding(child)


def wait_forwarding(child: subprocess.Popen[bytes]) -> int:
    """Wait for ``child``, passing on the signals of :data:`FORWARDED`; its exit status."""

    def forward(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = signals.wait_child(child)  # not child.wait(): see trainpool.signals
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code
