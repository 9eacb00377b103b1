"""The task guard ends its task when the run dies, however many SIGHUPs that death brings.

Linux sends ``PR_SET_PDEATHSIG`` each time the guard is re-parented, and a multi-threaded
run that is SIGKILLed re-parents it from each of its threads to the next as they exit: the
guard gets a burst of SIGHUPs (seen with strace: three from the run's pid within
milliseconds). A second one that arrived while the first was being handled used to raise
again outside the handler's ``try``: the guard died with a traceback, and the task it should
have ended ran on (``test_kfprun_interrupt``'s SIGKILL test failed so once in CI, and in 1
of 5 and 1 of 8 runs beside three busy loops). This test floods the guard with SIGHUPs; it
failed every time before the fix.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fixtures.processes import alive

from trainpool.kfprun.interrupt import TASK_GUARD
from trainpool.kfprun.task_guard import descendants


def test_a_burst_of_sighups_ends_the_task_and_then_the_guard(tmp_path: Path) -> None:
    for attempt in range(10):
        err_file = tmp_path / f"guard-{attempt}.err"
        with open(err_file, "w") as err:
            guard = subprocess.Popen(
                [sys.executable, "-I", "-S", str(TASK_GUARD), str(os.getpid()), "sleep", "300"],
                stderr=err,
            )
        deadline = time.monotonic() + 10
        while not (task := descendants(guard.pid)):
            assert time.monotonic() < deadline, "the guard started its task"
            time.sleep(0.01)
        time.sleep(0.05)  # the guard waits for its task
        # the run's threads exiting one after another: SIGHUPs until the guard is gone
        while guard.poll() is None:
            try:
                os.kill(guard.pid, signal.SIGHUP)
            except ProcessLookupError:
                break
        guard.wait(timeout=10)
        left = alive(task[0])
        if left:
            os.kill(task[0], signal.SIGKILL)
        assert "Traceback" not in err_file.read_text(), err_file.read_text()
        assert guard.returncode == 128 + signal.SIGHUP
        assert not left, "the task ended with the run"
