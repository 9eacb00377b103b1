"""Which emulator a local command uses, and where its store is: one truth, the emulator's.

The emulator is the one ``VERTEX_AI_EMULATOR_HOST`` names, else the one serving the root
(``--root``, else ``$TRAINPOOL_HOME``, else ``./.trainpool``; its lock file says where),
else one started for the command with its Cloud Storage door. When an emulator is named,
its store is what it says (:func:`trainpool.emulator_client.served_by`), never a guess from
``TRAINPOOL_HOME``: a ``--root`` that is another store is refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from trainpool import config
from trainpool.emulator_client import Served, current, served_by
from trainpool.errors import InputError
from trainpool.home import Home
from trainpool.kfp_local.execute import patched_environ


def store_for(root: Path | None = None) -> Home:
    """The store a command works in: the named emulator's, else ``root``'s, else the default."""
    named = config.emulator_host()
    if named is None or root is None:
        return current(root).resolved()
    served = served_by(named).home
    if root is not None and Path(root).resolve() != served.root:
        raise InputError.of(
            "--root",
            f"{root} is not the store of the emulator {config.EMULATOR_ENV} names ({named} "
            f"serves {served.root}); accepted: that root, or no --root",
        )
    return served


@contextlib.contextmanager
def emulator_for(root: Path | None = None) -> Iterator[tuple[str, Served]]:
    """``(address, what it serves)`` of the emulator to use, started for the block if need be;
    within the block ``VERTEX_AI_EMULATOR_HOST`` (and ``STORAGE_EMULATOR_HOST`` when it has a
    Cloud Storage door) name it."""
    from trainpool.emulator import root_lock, start

    home = store_for(root)
    named = config.emulator_host()
    address = named or root_lock.running(home.root)
    if address is not None:
        served = served_by(address)
        with patched_environ(_variables(address, served)):
            yield address, served
        return
    with start(home.root, storage=True) as emulator:
        with patched_environ(_variables(emulator.address, emulator.served)):
            yield emulator.address, emulator.served


def _variables(address: str, served: Served) -> dict[str, str]:
    return {config.EMULATOR_ENV: address, **served.storage_env}
