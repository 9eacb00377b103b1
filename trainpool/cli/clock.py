"""``trainpool clock show | advance DURATION | advance --to TIME [--wait]``: the emulator's clock.

Only the emulator has a clock to move (``VERTEX_AI_EMULATOR_HOST``); advancing it passes
every schedule fire time on the way, in order, and prints what each schedule did.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

import typer

from trainpool.cli._common import fail

clock_app = typer.Typer(
    help="The emulator's clock: show it, move it forward (schedules fire on the way).",
    no_args_is_help=True,
)


def _address() -> str:
    from trainpool.config import EMULATOR_ENV, emulator_host

    try:
        address = emulator_host()
    except ValueError as err:
        fail(str(err))
    if address is None:
        fail(
            f"{EMULATOR_ENV} is not set; accepted: the address of a running emulator "
            "(`trainpool emulator` prints it): Vertex AI's clock cannot be moved",
            1,
        )
    return address


def ahead(offset: timedelta) -> str:
    """``+3d 00:00:05`` (how far ahead of real time)."""
    seconds = int(offset.total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    return f"+{days}d {hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


def show_time(now: Any, offset: timedelta) -> str:
    stamp = now.isoformat(timespec="seconds").replace("+00:00", "Z")
    return f"emulator time {stamp} ({ahead(offset)} ahead of real time)"


@clock_app.command("show")
def show_command() -> None:
    """Print the emulator's time and how far ahead of real time it is."""
    import grpc

    from trainpool.emulator_client import get_time

    try:
        found = get_time(_address())
    except grpc.RpcError as err:
        fail(f"{err.code().name}: {err.details()}", 1)
    typer.echo(show_time(found.now, found.offset))


@clock_app.command("advance")
def advance_command(
    duration: Annotated[
        str, typer.Argument(help="How far: 1d, 12h, 30m, 1d12h, 3600s (or use --to).")
    ] = "",
    to: Annotated[
        str, typer.Option("--to", help="To this time instead: 2026-12-01T03:00:00Z.")
    ] = "",
    wait: Annotated[
        bool, typer.Option("--wait", help="Return once the schedules' runs have ended.")
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds --wait waits at most.")
    ] = 600.0,
) -> None:
    """Move the emulator's clock forward; every schedule fire time on the way is evaluated
    in order (runs still executing count against the schedule's limits)."""
    import grpc

    from trainpool.emulator.clock import parse_duration, parse_time
    from trainpool.emulator_client import advance_clock

    if bool(duration) == bool(to):
        fail("DURATION or --to: give exactly one; accepted: `advance 1d` or `advance --to TIME`")
    try:
        by = parse_duration(duration) if duration else None
        when = parse_time(to) if to else None
    except ValueError as err:
        fail(f"{'DURATION' if duration else '--to'}: {err}")
    try:
        done = advance_clock(_address(), by=by, to=when, wait_for_runs=wait, wait_timeout_s=timeout)
    except grpc.RpcError as err:
        fail(f"{err.code().name}: {err.details()}", 1)
    for event in done.events:
        typer.echo(f"schedule {event}")
    typer.echo(show_time(done.now, done.offset))
    if wait and not done.idle:
        fail(f"runs still going after {timeout:g}s (`trainpool schedule runs` shows them)", 1)


def register(app: typer.Typer) -> None:
    app.add_typer(clock_app, name="clock")
