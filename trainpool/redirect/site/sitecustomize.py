"""Points Google's clients in this Python process at the trainpool emulator; unchanged code.

``trainpool exec -- COMMAND`` (and a pipeline's GCPC launchers under ``trainpool run
--local``) put the folder of this file first on ``PYTHONPATH``; Python imports
``sitecustomize`` at start-up (the ``site`` module), the convention
``opentelemetry-instrument`` uses. Nothing is imported eagerly: each patch runs right after
its module is first imported (a post-import hook), so a program that never imports the
Vertex AI SDK pays nothing. Every patch reads the environment when it is called and does
nothing when ``VERTEX_AI_EMULATOR_HOST`` is unset, so the same process can talk to Google
Cloud again once it is.

What it changes, and why (google-cloud-aiplatform 1.x, google-api-core 2.x, GCPC 2.x):

- ``google.api_core.grpc_helpers.create_channel`` (and its asyncio twin), the one channel
  factory of every generated gRPC client: a channel to any ``*.googleapis.com`` host
  (``{location}-aiplatform``, ``logging``, ``cloudbuild``, ...) becomes an insecure channel to
  the emulator, which serves what it emulates and answers everything else UNIMPLEMENTED
  naming the service, at once. No environment variable redirects these clients: the SDK
  and GCPC both build ``{location}-aiplatform.googleapis.com`` themselves.
- ``google.auth.default``: a static token, no Application Default Credentials, no metadata
  server, no refresh (GCPC sends ``"Bearer " + credentials.token``, so anonymous
  credentials, whose token is None, would not do): the emulator's doors' secret
  (``CLOUDSDK_AUTH_ACCESS_TOKEN_FILE``, what gcloud sends too), which its HTTP doors take;
  the project is ``GOOGLE_CLOUD_PROJECT``.
- Nothing forces a transport: a client on REST (``aiplatform.init(api_transport="rest")``,
  a gapic client's ``transport="rest"``) reaches the emulator's REST door through its HTTPS
  proxy, which ``trainpool exec`` gives every process (``HTTPS_PROXY`` and the CA bundle).
- GCPC's launchers: cancel (a REST call in GCPC) and the long-running-operation REST calls
  of ``ModelUploadOp``/``ModelDeleteOp`` are sent over gRPC; their 20 s polling interval,
  and the SDK's 5 s, become ``TRAINPOOL_EXEC_POLL_S`` when that is set.
- Cloud Storage needs no patch: google-cloud-storage honours ``STORAGE_EMULATOR_HOST`` and
  gcloud ``CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE``, which ``trainpool exec`` sets.

A ``sitecustomize`` this one shadows (Debian ships one) still runs. Standard library only
at import time, and only what a Python's start has loaded already: every replica starts with
this hook, so what it imports is paid once per replica.
"""

from __future__ import annotations

import os
import sys

MYPY = False
if MYPY:  # for the type checker only: typing costs every replica's start 3.5 ms
    from collections.abc import Callable
    from typing import Any

EMULATOR_ENV = "VERTEX_AI_EMULATOR_HOST"
POLL_ENV = "TRAINPOOL_EXEC_POLL_S"
TOKEN = "trainpool-emulator"
TOKEN_FILE_ENV = "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"
GOOGLE_APIS = "googleapis.com"
_PATCHES: dict[str, list[Callable[[Any], None]]] = {}


def _emulator() -> str:
    return os.environ.get(EMULATOR_ENV, "").strip()


def _is_emulated(target: object) -> bool:
    """A Google API host (``dns:///``-prefixed or not, with or without a port)."""
    host = str(target or "").rpartition("/")[2].split(":")[0]
    return host == GOOGLE_APIS or host.endswith("." + GOOGLE_APIS)


def _token() -> str:
    """The doors' secret (the token file gcloud is given), else a placeholder."""
    path = os.environ.get(TOKEN_FILE_ENV, "")
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip() or TOKEN
    except OSError:
        return TOKEN


def after_import(name: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Run the decorated function on module ``name`` once it is imported (at once if it is)."""

    def register(patch: Callable[[Any], None]) -> Callable[[Any], None]:
        def once(module: Any) -> None:
            done = module.__dict__.setdefault("_trainpool_redirected", set())
            if patch.__name__ not in done:
                done.add(patch.__name__)
                patch(module)

        _PATCHES.setdefault(name, []).append(once)
        if name in sys.modules:
            once(sys.modules[name])
        return patch

    return register


class _PostImportFinder:
    """Finds a patched module with the other finders, then runs its patches after it loads.

    A meta path finder is anything with ``find_spec`` (the import system's protocol):
    subclassing ``importlib.abc.MetaPathFinder`` would import ``importlib.resources`` with
    it, 16 ms of every Python start that carries this hook (Python 3.11, measured with
    ``-X importtime``), that is of every replica's."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in _PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module: Any) -> None:
            original(module)
            for patch in _PATCHES.get(fullname, []):
                patch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _poll_s() -> float | None:
    raw = os.environ.get(POLL_ENV, "")
    try:
        return float(raw) if raw else None
    except ValueError:
        return None


@after_import("google.api_core.grpc_helpers")
def _sync_channels(module: Any) -> None:
    original = module.create_channel

    def create_channel(target: Any, *args: Any, **kwargs: Any) -> Any:
        address = _emulator()
        if address and (_is_emulated(target) or _is_emulated(kwargs.get("default_host"))):
            import grpc

            return grpc.insecure_channel(address, options=kwargs.get("options") or None)
        return original(target, *args, **kwargs)

    module.create_channel = create_channel


@after_import("google.api_core.grpc_helpers_async")
def _async_channels(module: Any) -> None:
    original = module.create_channel

    def create_channel(target: Any, *args: Any, **kwargs: Any) -> Any:
        address = _emulator()
        if address and (_is_emulated(target) or _is_emulated(kwargs.get("default_host"))):
            from grpc import aio

            return aio.insecure_channel(address, options=kwargs.get("options") or None)
        return original(target, *args, **kwargs)

    module.create_channel = create_channel


@after_import("google.auth")
def _credentials(module: Any) -> None:
    original = module.default

    def default(*args: Any, **kwargs: Any) -> Any:
        if not _emulator():
            return original(*args, **kwargs)
        from google.oauth2.credentials import Credentials

        class EmulatorCredentials(Credentials):  # type: ignore[misc]
            """The doors' secret of the emulator named now, read at every request: a client
            made before the emulator changed (the SDK keeps its credentials and clients in
            globals; a test suite starts an emulator per test) still gets in."""

            @property
            def token(self) -> str:
                return _token()

            @token.setter
            def token(self, value: Any) -> None:
                pass

            @property
            def expired(self) -> bool:
                return False

            @property
            def valid(self) -> bool:
                return True

            def refresh(self, request: Any) -> None:
                pass

        project = (
            os.environ.get("GOOGLE_CLOUD_PROJECT")
            or os.environ.get("CLOUDSDK_CORE_PROJECT")
            or os.environ.get("CLOUD_ML_PROJECT_ID")  # a replica's: Vertex sets it
        )
        return EmulatorCredentials(token=_token()), project

    module.default = default


for _name in (
    "google.cloud.aiplatform.jobs",
    "google.cloud.aiplatform.pipeline_jobs",
    "google.cloud.aiplatform.training_jobs",
):

    @after_import(_name)
    def _sdk_polling(module: Any) -> None:
        poll = _poll_s()
        if poll is not None and _emulator():
            module._JOB_WAIT_TIME = poll


@after_import("google_cloud_pipeline_components.container.v1.gcp_launcher.job_remote_runner")
def _gcpc_jobs(module: Any) -> None:
    poll = _poll_s()
    if poll is not None and _emulator():
        module._POLLING_INTERVAL_IN_SECONDS = poll
    original = module.JobRemoteRunner.send_cancel_request

    def send_cancel_request(self: Any, job_name: str) -> None:
        if not _emulator():
            return original(self, job_name)
        if not job_name:
            return None
        if "/hyperparameterTuningJobs/" in job_name:
            self.job_client.cancel_hyperparameter_tuning_job(name=job_name)
        else:
            self.job_client.cancel_custom_job(name=job_name)
        return None

    module.JobRemoteRunner.send_cancel_request = send_cancel_request


@after_import("google_cloud_pipeline_components.container.v1.gcp_launcher.lro_remote_runner")
def _gcpc_operations(module: Any) -> None:
    """GCPC's REST calls (``requests`` with a bearer token) made as the same gRPC calls."""
    poll = _poll_s()
    if poll is not None and _emulator():
        module._POLLING_INTERVAL_IN_SECONDS = poll
    original = module.LroRemoteRunner.request

    def request(
        self: Any,
        request_url: str,
        request_body: str,
        http_request: str = "post",
        user_agent: str = "",
    ) -> Any:
        if not _emulator():
            return original(self, request_url, request_body, http_request, user_agent)
        import json

        from google.api_core.client_options import ClientOptions
        from google.cloud import aiplatform_v1
        from google.protobuf import json_format

        path = request_url.split("/v1/", 1)[1]
        models = aiplatform_v1.ModelServiceClient(
            client_options=ClientOptions(api_endpoint=self.api_endpoint)
        )
        if http_request == "post" and path.endswith("/models:upload"):
            upload = aiplatform_v1.UploadModelRequest()
            body = dict(json.loads(request_body), parent=path[: -len("/models:upload")])
            json_format.ParseDict(body, upload._pb, ignore_unknown_fields=True)
            return json_format.MessageToDict(models.upload_model(request=upload).operation)
        if http_request == "delete" and "/models/" in path and "/operations/" not in path:
            return json_format.MessageToDict(models.delete_model(name=path).operation)
        if http_request == "get" and "/operations/" in path:
            operation = models._transport.operations_client.get_operation(path)
            return json_format.MessageToDict(operation)
        raise RuntimeError(
            f"trainpool: {http_request.upper()} {request_url} is not a call the emulator serves"
        )

    module.LroRemoteRunner.request = request


def _chain_shadowed_sitecustomize() -> None:
    """Run the ``sitecustomize`` later on ``sys.path`` that this one shadows."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        folder = os.path.abspath(entry or ".")
        if folder == here:
            continue
        path = os.path.join(folder, "sitecustomize.py")
        if os.path.isfile(path):
            import importlib.util

            spec = importlib.util.spec_from_file_location("_shadowed_sitecustomize", path)
            if spec is None or spec.loader is None:
                return
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except Exception as err:  # noqa: BLE001 - as site.py reports a failing one
                print(f"trainpool: the sitecustomize at {path} failed: {err!r}", file=sys.stderr)
            return


sys.meta_path.insert(0, _PostImportFinder())
if __name__ == "sitecustomize":
    _chain_shadowed_sitecustomize()
