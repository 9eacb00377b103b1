"""``trainpool emulator [--root DIR] [--port N] [--no-storage] [fault flags]``: the local
Vertex AI API.

It listens on ``<root>/emulator.sock`` (mode 0600: its owner only), or on
``127.0.0.1:N`` with ``--port`` (an opt-in: any local user can reach a port and run code as
you; the start-up line says so). It also serves ``<root>/gcs`` through the Cloud Storage
JSON API on ``http://127.0.0.1:PORT/<secret>`` (owner-only: the secret is in the root's
0600 files; ``--no-storage`` turns it off). One emulator per root: a second one on the
same root is refused, naming the running one.
"""

from __future__ import annotations

import gc
import signal
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

from trainpool import signals
from trainpool.cli._common import fail
from trainpool.config import default_root

DEFAULT_STORAGE_LIMIT = 5 << 30
"""The storage door's default object limit (5 GiB), as ``emulator.start``'s."""
GC_THRESHOLDS = (20_000, 20, 50)
"""The server's collector thresholds (CPython's defaults: 700, 10, 10)."""


def _collect_less() -> None:
    """This process only serves: the modules it has imported (aiplatform, protobuf, gRPC)
    live as long as it does, so ``gc.freeze()`` takes their objects out of every later
    collection (Python docs, ``gc.freeze``), and the young generation is collected less
    often: every collection stops all the handler threads, so fewer collections shorten the
    tail of every call. ``benchmarks/bench_load.py`` measures it (its figures: the benchmarks
    page, docs/reference/benchmarks.md). Only the ``trainpool emulator`` process: an
    emulator started inside another program (the pytest plugin, ``trainpool run --local``)
    leaves that program's collector alone."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def emulator_command(
    port: Annotated[
        int | None,
        typer.Option(
            help="Listen on 127.0.0.1:PORT (0: any free port) instead of the root's socket. "
            "UNSAFE on a shared machine: any local user can reach a port and have the emulator "
            "run code as you."
        ),
    ] = None,
    root: Annotated[
        Path | None,
        typer.Option(help="State directory (default: $TRAINPOOL_HOME or ./.trainpool)."),
    ] = None,
    unavailable_rate: Annotated[
        float, typer.Option(help="Fault: share of calls (0..1) answered UNAVAILABLE.")
    ] = 0.0,
    delay: Annotated[float, typer.Option(help="Fault: seconds added to every answer.")] = 0.0,
    fault_seed: Annotated[int, typer.Option(help="Seed of the UNAVAILABLE choice.")] = 0,
    fault_method: Annotated[
        list[str] | None,
        typer.Option(help="Limit the faults to this method (repeatable), e.g. GetCustomJob."),
    ] = None,
    kill_replica: Annotated[
        str, typer.Option(help="Fault: SIGKILL this replica (e.g. workerpool1-0) of every job...")
    ] = "",
    kill_after: Annotated[float, typer.Option(help="...this many seconds after it starts.")] = 1.0,
    max_replicas: Annotated[
        int | None,
        typer.Option(
            help="Replicas running at once, this machine's quota: jobs beyond it wait QUEUED "
            "and start in creation order (default: $TRAINPOOL_EMULATOR_MAX_REPLICAS, else "
            "twice the CPUs, at least 8)."
        ),
    ] = None,
    storage: Annotated[
        bool,
        typer.Option(
            help="Serve the root's gcs/ through the Cloud Storage JSON API on "
            "http://127.0.0.1:PORT/<secret> (STORAGE_EMULATOR_HOST, gcloud); owner-only: the "
            "secret is in the root's 0600 files."
        ),
    ] = True,
    storage_max_bytes: Annotated[
        int,
        typer.Option(help="The largest object the storage door accepts (bytes; 413 beyond)."),
    ] = DEFAULT_STORAGE_LIMIT,
) -> None:
    """Serve the Vertex AI JobService (and the other emulated services) to this user."""
    from trainpool import emulator

    _collect_less()
    try:
        faults = emulator.Faults(
            unavailable_rate=unavailable_rate,
            delay_s=delay,
            seed=fault_seed,
            methods=tuple(fault_method or ()),
            kill=emulator.KillFault(kill_replica, kill_after) if kill_replica else None,
        )
        emu = emulator.start(
            root or default_root(),
            port=port,
            faults=faults,
            storage=storage,
            storage_max_bytes=storage_max_bytes,
            max_replicas=max_replicas,
        )
    except (ValueError, OSError) as err:
        fail(str(err))
    stopping = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    at_most = f"at most {emu.manager.quota.limit} replicas at once"
    if emu.port is None:
        typer.echo(
            f"Vertex AI emulator listening on {emu.address} (root {emu.root}; owner only); "
            f"{at_most}"
        )
    else:
        typer.echo(
            f"Vertex AI emulator listening on {emu.address} (root {emu.root}); {at_most}; "
            "WARNING: any local user can reach this port and have the emulator run code as you"
        )
    typer.echo(f"export VERTEX_AI_EMULATOR_HOST={emu.address}", err=True)
    if emu.storage_address:
        typer.echo(
            f"Cloud Storage JSON API listening on {emu.storage_address.rsplit('/', 1)[0]}/<secret> "
            f"(root {emu.root}/gcs; owner only: the secret is in {emu.root}/storage.token)"
        )
        for name, value in emu.storage_env().items():
            typer.echo(f"export {name}={value}", err=True)
    if emu.rest_address:
        typer.echo(
            f"REST door listening on {emu.rest_address} (Google's URLs as "
            f"{emu.rest_address}/HOST/PATH; owner only: Authorization: Bearer <the secret>)"
        )
        typer.echo(f"export TRAINPOOL_REST_URL={emu.rest_address}", err=True)
    if emu.proxy_address:
        typer.echo(
            f"HTTPS proxy listening on {emu.proxy_address} (Google's own URLs; `trainpool exec "
            "-- COMMAND` gives a command every variable it needs)"
        )
    signals.wait_event(stopping)  # not stopping.wait(): a signal on another thread is lost
    emu.close()


def register(app: typer.Typer) -> None:
    app.command("emulator")(emulator_command)
