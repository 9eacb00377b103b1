"""An emulator that times its own side of each call: ``bench_rest.py --call-times``.

Run: ``python3 benchmarks/call_times.py OUT.json emulator --root ROOT`` starts ``trainpool
emulator`` as ``python -m trainpool.cli`` would, with two methods timed: ``Service.call``
(the method itself, the same code behind both doors) and ``Database.write`` (a record's
insert or update, waiting for its turn and committed). Each call adds ``[door, name, wall s,
CPU s]`` to ``OUT.json``, written every second: the door is ``REST`` for the REST door's
threads (``http.server``'s, one a connection), ``gRPC`` for the gRPC server's handlers and
``engine`` for the rest (the job engine's threads).

What it measures is the emulator's own time, with none of the clients' (the official REST
client spends 5 to 8 times gRPC's CPU a call, and on 2 cores the clients' CPU delays the
emulator's threads): where a REST request waits that a gRPC one does not.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Timed = list[Any]


def door() -> str:
    name = threading.current_thread().name
    if "process_request" in name:
        return "REST"
    return "engine" if name.startswith("trainpool-") else "gRPC"


def timing(times: list[Timed], name: Callable[..., str], function: Any) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            times.append(
                [door(), name(*args), time.perf_counter() - wall, time.thread_time() - cpu]
            )

    return timed


def keep(times: list[Timed], out: Path) -> None:
    while True:
        time.sleep(1.0)
        out.write_text(json.dumps(list(times)))


def main() -> None:
    out, argv = Path(sys.argv[1]), sys.argv[2:]
    from trainpool.emulator.api.rpc import Service
    from trainpool.emulator.records.database import Database

    times: list[Timed] = []
    Service.call = timing(times, lambda _self, method, _request: method, Service.call)  # type: ignore[method-assign]
    if hasattr(Database, "write"):  # a record's write (group commit) since 2026-11-29
        Database.write = timing(times, lambda _self, _fn: "Database.write", Database.write)  # type: ignore[method-assign]
    if hasattr(Database, "_commit"):  # one batch, under the writers' lock
        Database._commit = timing(  # type: ignore[method-assign]
            times, lambda _self, batch: f"Database._commit x{min(len(batch), 9)}", Database._commit
        )
    from trainpool.emulator.rest import transcode

    for step in ("build", "render"):  # the REST door's JSON to proto and back
        setattr(
            transcode,
            step,
            timing(times, lambda *_a, s=step: f"REST {s}", getattr(transcode, step)),
        )
    threading.Thread(target=keep, args=(times, out), daemon=True).start()
    from trainpool.cli import main as cli

    sys.argv = ["trainpool", *argv]
    cli()


def summary(path: Path, doors: tuple[str, ...] = ("gRPC", "REST")) -> list[str]:
    """Lines of p50 / p90 wall (and p50 CPU) by method, each door side by side."""
    from job_calls import percentile

    rows: dict[tuple[str, str], list[Timed]] = {}
    for row in json.loads(path.read_text()):
        rows.setdefault((row[1], row[0]), []).append(row)
    names = sorted(
        {name for name, _ in rows}, key=lambda n: (n.startswith(("Database.", "REST ")), n)
    )
    lines = [
        "the emulator's own time, ms".ljust(34)
        + "".join(f"{d + ' p50':>10}{'p90':>8}{'CPU':>6}" for d in doors)
    ]
    for name in names:
        cells = ""
        for d in doors:
            found = rows.get((name, d), [])
            walls, cpus = [r[2] * 1000 for r in found], [r[3] * 1000 for r in found]
            cells += (
                f"{percentile(walls, 0.5):10.1f}{percentile(walls, 0.9):8.1f}"
                f"{percentile(cpus, 0.5):6.2f}"
                if found
                else f"{'-':>10}{'-':>8}{'-':>6}"
            )
        lines.append(f"{name:34}{cells}")
    return lines


if __name__ == "__main__":
    main()
