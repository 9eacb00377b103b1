"""The engine's shared threads: one job's calls in order, one at a time."""

from __future__ import annotations

import threading
import time

from trainpool.emulator.jobs.engine import Engine


def test_one_jobs_calls_run_one_at_a_time_in_order() -> None:
    engine = Engine(workers=4, setup_workers=1)
    errors: list[BaseException] = []
    serial = engine.serial(errors.append)
    seen: list[int] = []
    busy = threading.Lock()
    all_done = threading.Event()

    def call(i: int) -> None:
        assert busy.acquire(blocking=False), "two calls of one job at once"
        time.sleep(0.001)
        seen.append(i)
        busy.release()
        if i == 49:
            all_done.set()

    for i in range(50):
        serial.send(lambda i=i: call(i))
    assert all_done.wait(10)
    assert seen == list(range(50)) and errors == []
    engine.close()
