"""The threads every job shares: a bounded pool, a timer thread, and serial queues.

No job has a thread of its own. What a job does is a series of short calls, each made when
something happened to it (a replica exited, a Cancel arrived, a deadline passed):

- :class:`Serial`: one job's calls, run on the shared ``pool`` one at a time and in order,
  so a job's state needs no lock of its own and two of its events never race;
- ``setup``: a second small pool for the one step that may take long (planning a job's
  replicas installs its Python packages), so a slow install never holds up other jobs'
  events;
- ``stops``: a third, for the other wait: stopping a job's replicas (at its end, and before
  a restart of replicas that still run: ``restartJobOnWorkerRestart``, a job retry) gives
  them a grace period after SIGTERM (:data:`trainpool.emulator.jobs.processes.TERMINATE_GRACE_S`),
  so a replica that ignores SIGTERM holds a stopping thread, never a job's;
- :class:`Timers`: one thread that calls what is due (a job's timeout, the end of a grace
  period, a sweep's next look at its running trials).

Replica exits arrive on the spawner's one reader thread
(:mod:`trainpool.emulator.jobs.spawner`). The emulator's threads are therefore bounded by
constants, whatever the number of jobs: :data:`WORKERS` + :data:`SETUP_WORKERS` +
:data:`TERMINATE_WORKERS` + 1 timer + 1 reader, besides the gRPC server's own pool.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

WORKERS = 2
"""Threads that run jobs' calls (records, starts of replicas, sweeps' decisions). The calls are
short: the waits are on ``setup`` and ``stops``. Every thread of the emulator shares one GIL
with the gRPC handlers: more of them runnable at once only makes each call wait longer for
it, and more job threads did not end jobs sooner. ``benchmarks/bench_load.py`` measures it;
its figures for this choice are on the benchmarks page (docs/reference/benchmarks.md, "The
emulator under load")."""
SETUP_WORKERS = 4
"""Threads that plan jobs' replicas (package installs); a job waits PENDING for one."""
TERMINATE_WORKERS = 4
"""Threads that terminate ended jobs' replicas (SIGTERM, the grace period, SIGKILL)."""


class Timer:
    """A call due at a time; ``cancel()`` makes it not happen."""

    def __init__(self, when: float, call: Callable[[], None]) -> None:
        self.when = when
        self.call = call
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timers:
    """One thread calling what is due, in order of time; calls must be quick."""

    def __init__(self, name: str = "trainpool-timers") -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self._changed = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def after(self, seconds: float, call: Callable[[], None]) -> Timer:
        return self.at(time.monotonic() + seconds, call)

    def at(self, when: float, call: Callable[[], None]) -> Timer:
        """Call ``call()`` at monotonic time ``when`` (at once when it has passed)."""
        timer = Timer(when, call)
        with self._changed:
            heapq.heappush(self._heap, (when, next(self._order), timer))
            self._changed.notify()
        return timer

    def _loop(self) -> None:
        while True:
            with self._changed:
                while not self._closed and (not self._heap or self._heap[0][0] > time.monotonic()):
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._changed.wait(wait)
                if self._closed:
                    return
                _, _, timer = heapq.heappop(self._heap)
            if not timer.cancelled:
                try:
                    timer.call()
                except Exception:  # noqa: BLE001 - a timer's call reports its own errors
                    pass

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify()
        self._thread.join(timeout=5)


class Engine:
    """The pools and the timer thread of one emulator's jobs."""

    def __init__(
        self,
        workers: int = WORKERS,
        setup_workers: int = SETUP_WORKERS,
        terminate_workers: int = TERMINATE_WORKERS,
    ) -> None:
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="trainpool-job")
        self.setup = ThreadPoolExecutor(setup_workers, thread_name_prefix="trainpool-setup")
        self.terminations = ThreadPoolExecutor(
            terminate_workers, thread_name_prefix="trainpool-terminate"
        )
        self.timers = Timers()

    def serial(self, on_error: Callable[[BaseException], None]) -> Serial:
        """A new queue of calls for one job; ``on_error`` gets what a call raises."""
        return Serial(self, on_error)

    def close(self) -> None:
        self.timers.close()
        self.setup.shutdown(wait=False, cancel_futures=True)
        self.terminations.shutdown(wait=False, cancel_futures=True)
        self.pool.shutdown(wait=False, cancel_futures=True)


class Serial:
    """One job's calls, run on the engine's pool one at a time, in the order they were sent."""

    def __init__(self, engine: Engine, on_error: Callable[[BaseException], None]) -> None:
        self.engine = engine
        self.on_error = on_error
        self._calls: deque[Callable[[], None]] = deque()
        self._lock = threading.Lock()
        self._busy = False

    def send(self, call: Callable[[], None]) -> None:
        """Run ``call()`` after the calls sent before it (from any thread; never blocks)."""
        with self._lock:
            self._calls.append(call)
            if self._busy:
                return
            self._busy = True
        try:
            self.engine.pool.submit(self._drain)
        except RuntimeError:  # the pool is shut down: the emulator is stopping
            with self._lock:
                self._busy = False

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._calls:
                    self._busy = False
                    return
                call = self._calls.popleft()
            try:
                call()
            except Exception as err:  # noqa: BLE001 - handed to the job, which ends visibly
                self.on_error(err)
