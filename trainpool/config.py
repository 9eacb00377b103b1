"""Settings every layer reads from the environment, each defined once.

Standard library only, so the lowest layers may import it.

- ``COMPONENTS_IMAGE``: the image every trainpool component runs in (trainpool and
  kfp installed; built from the root ``Dockerfile``), read at compile time from
  ``TRAINPOOL_COMPONENTS_IMAGE``.
- ``VERTEX_AI_EMULATOR_HOST`` (named after Google's own ``PUBSUB_EMULATOR_HOST``):
  when set, every Google Cloud client trainpool makes talks to the local emulator,
  at ``unix:/ABS/PATH`` (its default socket, which only its owner may use) or at
  ``127.0.0.1:PORT`` (gRPC's own target forms).
- ``TRAINPOOL_REST_URL``: the emulator's REST door (``http://127.0.0.1:PORT``), set by
  ``trainpool exec``; a Google URL ``https://HOST/PATH`` is ``$TRAINPOOL_REST_URL/HOST/PATH``
  there.
- ``TRAINPOOL_HOME``: the local store (emulator state, local Cloud Storage, local
  images), ``./.trainpool`` by default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from trainpool import __version__

COMPONENTS_IMAGE = os.environ.get(
    "TRAINPOOL_COMPONENTS_IMAGE", f"us-docker.pkg.dev/trainpool/images/components:{__version__}"
)

EMULATOR_ENV = "VERTEX_AI_EMULATOR_HOST"
REST_ENV = "TRAINPOOL_REST_URL"
HOME_ENV = "TRAINPOOL_HOME"
DEFAULT_HOME = ".trainpool"
_LOOPBACK = ("127.", "localhost", "[::1]")
_UNIX = ("unix:/", "unix:///")


def emulator_host(environ: Mapping[str, str] | None = None) -> str | None:
    """The emulator's gRPC target when ``VERTEX_AI_EMULATOR_HOST`` is set, else None:
    ``unix:/ABS/PATH`` (or ``unix:///ABS/PATH``), or a loopback ``host:port``."""
    host = (os.environ if environ is None else environ).get(EMULATOR_ENV, "").strip()
    if not host:
        return None
    if not host.startswith(_LOOPBACK + _UNIX):
        raise ValueError(
            f"{EMULATOR_ENV}={host!r}: the emulator listens on a local socket or loopback only; "
            "accepted: unix:/ABSOLUTE/PATH, 127.0.0.1:PORT, localhost:PORT or [::1]:PORT"
        )
    return host


def default_root(environ: Mapping[str, str] | None = None) -> Path:
    """The local store: ``$TRAINPOOL_HOME``, else ``./.trainpool``."""
    return Path((os.environ if environ is None else environ).get(HOME_ENV) or DEFAULT_HOME)
