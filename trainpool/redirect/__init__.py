"""Google's clients in a user's process, pointed at the emulator, with no change to the code.

:data:`SITE` is the folder of a ``sitecustomize.py`` (standard library only, self-contained,
so it works in any Python that has Google's libraries, with or without trainpool) that
patches the Vertex AI SDK, the gapic clients and GCPC's launchers at import time;
:func:`environment` is what a process needs besides it: ``PYTHONPATH`` with :data:`SITE`
first, ``VERTEX_AI_EMULATOR_HOST``, and, when the emulator serves its Cloud Storage door,
``STORAGE_EMULATOR_HOST`` and gcloud's storage endpoint, and for gcloud its configuration
(:mod:`.gcloud`: every API's endpoint override) and for HTTPS clients the proxy and its CA
(:mod:`.https`). ``trainpool exec`` (:mod:`trainpool.emulated.command_run`) runs a command
with it; ``trainpool.testing`` applies it to a test session; a local run gives it to GCPC's
launchers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from trainpool.config import EMULATOR_ENV, REST_ENV
from trainpool.emulator_client import Served
from trainpool.home import Home
from trainpool.redirect import docker, gcloud, https

SITE = Path(__file__).with_name("site")
"""The folder holding the ``sitecustomize.py`` that points clients at the emulator."""
TOKEN_FILE_ENV = "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"
"""gcloud's token file: the doors' secret, which the REST and storage doors take."""
POLL_ENV = "TRAINPOOL_EXEC_POLL_S"
POLL_S = "0.5"
"""How often the SDK and GCPC's launchers poll a job on the emulator (Vertex: 5 s and 20 s;
a local job's end is worth seeing sooner)."""


def environment(
    address: str,
    storage_env: Mapping[str, str] | None = None,
    *,
    project: str = "",
    base: Mapping[str, str] | None = None,
    rest_address: str = "",
    home: Home | None = None,
    proxy_address: str = "",
    config_dir: Path | None = None,
) -> dict[str, str]:
    """The variables that point a process's Google clients at the emulator at ``address``
    (and Cloud Storage clients at its door: ``storage_env``, what the emulator gives,
    ``EmulatorState.storage_env``), over ``base`` (default: this process's).

    With the emulator's REST door (``rest_address``) and its store (``home``): gcloud gets
    the store's own configuration, every API pointed at the door (:mod:`.gcloud`, written
    here), and the doors' secret as its token; Python clients that speak HTTP find the door
    in ``TRAINPOOL_REST_URL``. With its HTTPS proxy (``proxy_address``), every client that
    speaks HTTPS to Google's own URLs reaches the emulator through it (:mod:`.https`).

    gcloud's configuration, gsutil's and ADC's files are the store's (``trainpool exec``),
    or those of ``config_dir`` for processes that keep a configuration of their own (a
    replica, a pipeline run's tasks: ``gcloud config set`` there reaches no other); gsutil's
    project is ``project``, else the ``CLOUDSDK_CORE_PROJECT`` already in ``base``.

    A user's command (no ``config_dir``) also gets a ``docker`` first on ``PATH`` whose
    ``push`` and ``pull`` of Artifact Registry names reach the emulator (:mod:`.docker`)."""
    env = dict(os.environ if base is None else base)
    paths = [str(SITE), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env[EMULATOR_ENV] = address
    env.setdefault(POLL_ENV, POLL_S)
    env.update(storage_env or {})
    if rest_address and home is not None:
        env[REST_ENV] = rest_address
        env[TOKEN_FILE_ENV] = str(home.storage_token)
        ca_bundle = home.ca_bundle if proxy_address else None
        folder = config_dir or home.gcloud_config
        env["CLOUDSDK_CONFIG"] = str(gcloud.configure(folder, rest_address, ca_bundle))
        if proxy_address:
            boto_project = project or env.get("CLOUDSDK_CORE_PROJECT", "")
            env.update(https.variables(env, home, proxy_address, boto_project, config_dir))
        if config_dir is None:  # a user's command, not a replica: docker push lands here
            shims = str(docker.install(home))
            rest = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p != shims]
            env["PATH"] = os.pathsep.join([shims, *rest])
    if project:
        env.setdefault("GOOGLE_CLOUD_PROJECT", project)
        env.setdefault("CLOUDSDK_CORE_PROJECT", project)
    return env


def served_environment(
    address: str,
    served: Served,
    *,
    project: str = "",
    base: Mapping[str, str] | None = None,
    config_dir: Path | None = None,
) -> dict[str, str]:
    """:func:`environment` for every door the emulator at ``address`` says it serves
    (``served``: :func:`trainpool.emulator_client.served_by`, or a running emulator's
    ``served``): what ``trainpool exec`` gives a command."""
    return environment(
        address,
        served.storage_env,
        project=project,
        base=base,
        rest_address=served.rest_address,
        home=served.home,
        proxy_address=served.proxy_address,
        config_dir=config_dir,
    )


def asked_environment(
    address: str,
    *,
    project: str = "",
    base: Mapping[str, str] | None = None,
    config_dir: Path | None = None,
) -> dict[str, str]:
    """:func:`served_environment` for the emulator at ``address``, asked what it serves
    (:func:`trainpool.emulator_client.served_by`); when it does not answer, its gRPC door
    alone (:func:`environment`), as before it said."""
    from trainpool.emulator_client import served_by

    try:
        served = served_by(address, timeout_s=5.0)
    except OSError:
        return environment(address, project=project, base=base)
    return served_environment(address, served, project=project, base=base, config_dir=config_dir)


def point_here(address: str | None = None, *, project: str = "") -> None:
    """Point this process's Google clients at the emulator at ``address`` (default:
    ``VERTEX_AI_EMULATOR_HOST``), as ``trainpool exec`` points a command's: the emulator
    says where its store and doors are (:func:`trainpool.emulator_client.served_by`), their
    variables go into ``os.environ`` (:func:`environment`) and the patches are applied
    (:func:`install`). For a notebook or script that already runs; clients made before the
    call keep the endpoint they were made with."""
    from trainpool.config import emulator_host
    from trainpool.emulator_client import served_by

    address = address or emulator_host()
    if not address:
        raise ValueError(
            f"point_here: no emulator address; accepted: an address (unix:PATH or "
            f"127.0.0.1:PORT) or {EMULATOR_ENV} set to one (`trainpool emulator` prints it)"
        )
    os.environ.update(served_environment(address, served_by(address), project=project))
    install()


def install() -> None:
    """Apply the patches to this process (as ``sitecustomize`` would at start-up): for a
    test session, after :func:`environment`'s variables are in ``os.environ``."""
    import importlib.util
    import sys

    if "trainpool_redirect_site" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(
        "trainpool_redirect_site", SITE / "sitecustomize.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["trainpool_redirect_site"] = module
    spec.loader.exec_module(module)
