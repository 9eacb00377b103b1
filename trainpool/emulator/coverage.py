"""The emulator's coverage page, ``docs/emulator-coverage.md``, generated from what it serves.

Every method of every Google API the emulator answers is listed from the installed Google
clients (their gRPC stubs and REST rules: :mod:`trainpool.emulator.rest.routes`), and its
state read from the emulator's own service table (a started emulator's
``EmulatorState.services``): **served**, **refused** (answered UNIMPLEMENTED with a reason of
its own, :data:`trainpool.emulator.api.unserved.REFUSED`) or **not emulated** (answered
UNIMPLEMENTED naming it, REST 501). Vertex AI services of which the emulator serves nothing
are listed by name. The gcloud commands that the test suite runs are listed with the test
that runs them (:data:`GCLOUD_COMMANDS`; ``tests/test_emulator_coverage.py`` checks each is
in its test, and that the page is what this module writes). LocalStack's coverage pages
are the model.

``python3 -m trainpool.emulator.coverage [--check]`` writes the page (or exits 1 when the
checked-in page differs).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from trainpool.emulator.api.unserved import REFUSED
from trainpool.emulator.cloud_storage.routes import ROUTES
from trainpool.emulator.field_coverage import unapplied
from trainpool.emulator.rest.apis import SERVED_APIS
from trainpool.emulator.rest.routes import Route, methods_of, package_routes

PAGE = Path(__file__).resolve().parents[2] / "docs" / "emulator-coverage.md"
GCLOUD_COMMANDS: tuple[tuple[str, str, str], ...] = (
    (
        "gcloud ai custom-jobs create --worker-pool-spec=... (x3, a Reduction Server)",
        "runs the job; reducers listed in CLUSTER_SPEC, not started",
        "tests/test_redirect_gcloud.py",
    ),
    ("gcloud ai custom-jobs create --config=FILE", "runs the job", "tests/test_redirect_gcloud.py"),
    ("gcloud ai custom-jobs list / describe / cancel", "served", "tests/test_redirect_gcloud.py"),
    (
        "gcloud ai custom-jobs stream-logs JOB",
        "the replicas' lines from Cloud Logging",
        "tests/test_emulator_cloud_logging_logging_service.py",
    ),
    (
        "gcloud ai hp-tuning-jobs create --config=FILE",
        "runs the sweep",
        "tests/test_redirect_gcloud.py",
    ),
    ("gcloud ai models upload / list", "served", "tests/test_redirect_gcloud.py"),
    (
        "gcloud ai models upload --parent-model --version-aliases / list-version / describe "
        "ID@ALIAS / delete-version",
        "served: a new version, its aliases, the versions listed, one deleted",
        "tests/test_redirect_gcloud.py",
    ),
    (
        "gcloud ai persistent-resources create / describe / list / delete",
        "served (PROVISIONING, then RUNNING)",
        "tests/test_emulator_persistent_persistent_resource_service.py",
    ),
    (
        "gcloud logging read FILTER",
        "served (the Logging query language)",
        "tests/test_emulator_cloud_logging_logging_service.py",
    ),
    (
        "gcloud builds submit --tag IMAGE DIR",
        "built on the container engine, every step run (a base it cannot pull: the offline "
        "python:3.X-slim stand-in, said in the log, which trusts this machine's CA bundle, or "
        "TRAINPOOL_CA_BUNDLE's, so that RUN pip install works behind a TLS-intercepting "
        "proxy; Vertex's prebuilt training images and Google's TensorFlow and PyTorch Deep "
        "Learning Containers: a stand-in of the framework on the Python it supports, built "
        "once, said in the log), else (no engine, or a base it cannot have) into the local "
        "image store (only pip install -r runs); log streamed",
        "tests/test_emulator_prebuilt_containers.py",
    ),
    (
        "gcloud builds submit --config cloudbuild.yaml DIR",
        "built as --tag is (its docker build step's Dockerfile and build args)",
        "tests/test_redirect_gcloud.py",
    ),
    (
        "docker build -t IMAGE DIR, then a job naming IMAGE",
        "its replicas are containers of IMAGE (an Artifact Registry or gcr.io IMAGE never "
        "pushed: the job log says the pull would fail on Vertex AI); an engine that goes away "
        "mid-job fails the job, naming it; a job naming an image no one has (not the "
        "engine's, not the local image store's, not a prebuilt one, not pullable) fails at "
        "once, saying why and how to build it; a full engine disk fails it RESOURCE_EXHAUSTED, "
        "naming the disk",
        "tests/test_emulator_jobs_containers.py",
    ),
    (
        "a job (or a pipeline task) naming an image the engine lacks",
        "pulled as docker run pulls it, where the network allows (never a name of the "
        "emulated Artifact Registry, save Google's public images), said in the job log; "
        "else its offline stand-in where it has one (python:3.X-slim, Vertex's prebuilt "
        "images, the TensorFlow and PyTorch Deep Learning Containers, GCPC's image), said",
        "tests/test_emulator_jobs_containers.py",
    ),
    (
        "a pipeline task (trainpool run --local, a PipelineJob), with a container engine",
        "a container of its component's image where the engine has it or can be given "
        "(pulled, a stand-in: python:3.X-slim, GCPC's image); trainpool's own components a "
        "container of their dependencies' image (the root Dockerfile's FROM and "
        "constraints.txt, built once) with this checkout's trainpool bound read-only; any "
        "other image: its sandbox, said in the task's log",
        "tests/test_emulator_jobs_containers.py",
    ),
    (
        "curl, gcloud, gsutil, the SDK and the gapic clients inside a replica's container",
        "answered by the emulator as under trainpool exec (its HTTPS proxy and CA, gcloud's "
        "and gsutil's configuration, Google's client hook); no Google host reached",
        "tests/test_emulator_containers_clients.py",
    ),
    (
        "docker pull IMAGE (Artifact Registry, gcr.io), under trainpool exec",
        "answers what a push recorded in the emulator's Artifact Registry (a moved tag put "
        "back); manifest unknown for a name nobody pushed, whatever the engine holds",
        "tests/test_emulator_jobs_containers.py",
    ),
    (
        "gcloud ai custom-jobs create --worker-pool-spec=...,local-package-path=DIR",
        "gcloud's own docker build (a base the engine cannot pull: its offline stand-in, said) "
        "and docker push to gcr.io land on the engine and the emulator's Artifact Registry; the "
        "job runs as containers of the image",
        "tests/test_emulator_jobs_containers.py",
    ),
    (
        "docker build -t IMAGE DIR (FROM python:3.X-slim), under trainpool exec",
        "the real docker build; a base the engine cannot pull gets its offline stand-in first, "
        "said on standard error",
        "tests/test_emulator_jobs_containers.py",
    ),
    (
        "docker push IMAGE (Artifact Registry, gcr.io), under trainpool exec",
        "recorded in the emulator's Artifact Registry, the image kept in the engine (no layer "
        "uploaded; digest: the image's id); a repository never created refuses it as Artifact "
        "Registry does; gcr.io repositories made on the first push",
        "tests/test_emulator_jobs_containers.py",
    ),
    (
        "gcloud artifacts docker images list REPO[/IMAGE] --include-tags",
        "served (the images pushed or built there); docker images describe: not served "
        "(Container Analysis)",
        "tests/test_emulator_jobs_containers.py",
    ),
    (
        "gcloud auth configure-docker HOSTS",
        "gcloud's own: writes docker's credential helpers (unused by the docker push above)",
        "tests/test_emulator_jobs_containers.py",
    ),
    ("gcloud builds list", "served", "tests/test_redirect_gcloud.py"),
    (
        "gcloud services enable / list --enabled / disable",
        "recorded per project",
        "tests/test_emulator_api_service_usage.py",
    ),
    (
        "gcloud artifacts repositories create / list / describe / delete",
        "recorded per project",
        "tests/test_emulator_artifact_registry_artifact_registry.py",
    ),
    (
        "gcloud storage cp / ls / cat / rm",
        "the local store",
        "tests/test_emulator_cloud_storage_gcloud.py",
    ),
    (
        "gcloud storage buckets create / delete (and rm -r gs://BUCKET)",
        "the local store; a bucket that holds objects is kept (409)",
        "tests/test_redirect_gcloud.py",
    ),
    (
        "gsutil mb / cp / ls / cat / rm / rb",
        "the local store (through the HTTPS proxy)",
        "tests/test_redirect_https.py",
    ),
    ("gcloud auth print-access-token", "the doors' secret", "tests/test_redirect_gcloud.py"),
    (
        "gcloud pubsub topics create (any API not served)",
        "fails at once, naming the API",
        "tests/test_redirect_gcloud.py",
    ),
)
"""``(command as typed, what the emulator does, the test that types it)``."""
VERSIONED = ("google.cloud.aiplatform.v1.", "google.cloud.aiplatform.v1beta1.")


def _cell(text: str) -> str:
    """``text`` in a Markdown table cell: a ``|`` (a regex's alternation) escaped."""
    return text.replace("|", "\\|")


def _short(service: str) -> str:
    return service.rsplit(".", 1)[-1]


def _served() -> dict[str, set[str]]:
    """Service -> methods of a started emulator's table (v1beta1 twins included)."""
    from trainpool.emulator import start

    with tempfile.TemporaryDirectory() as root, start(Path(root) / "store", storage=False) as emu:
        table = {name: set(s.methods) for name, s in emu.state.services.items()}
        for name in emu.state.twins.names():
            twin = emu.state.twins.get(name)
            if twin is not None:
                table[name] = set(twin.methods)
    return table


def _state(served: dict[str, set[str]], service: str, method: str) -> str:
    if method in served.get(service, ()):
        return "served"
    if f"{service}/{method}" in REFUSED:
        return f"refused: {REFUSED[f'{service}/{method}']}"
    return "not emulated"


def _http(routes: list[Route]) -> dict[tuple[str, str], str]:
    first: dict[tuple[str, str], str] = {}
    for route in routes:
        first.setdefault((route.service, route.method), f"`{route.verb} {route.template.text}`")
    return first


def _api_section(api: str, served: dict[str, set[str]]) -> list[str]:
    packages, extra = SERVED_APIS[api]
    methods: list[tuple[str, str]] = []
    routes: list[Route] = list(extra)
    for package in packages:
        methods += methods_of(package)
        routes += package_routes(package)
    methods += [(r.service, r.method) for r in extra]
    http = _http(routes)
    by_service: dict[str, list[str]] = defaultdict(list)
    for service, method in dict.fromkeys(methods):
        by_service[service].append(method)
    lines = [f"## `{api}.googleapis.com`", ""]
    idle: list[str] = []
    for service in sorted(by_service):
        names = sorted(set(by_service[service]))
        states = {m: _state(served, service, m) for m in names}
        count = sum(s == "served" for s in states.values())
        if count == 0:
            idle.append(f"| `{service}` | {len(names)} |")
            continue
        lines += [f"### `{service}`: {count} of {len(names)} methods served", ""]
        lines += ["| method | HTTP | state |", "|---|---|---|"]
        lines += [f"| {m} | {http.get((service, m), 'gRPC only')} | {states[m]} |" for m in names]
        lines.append("")
    if idle:
        lines += [
            "### Services of this API the emulator does not serve",
            "",
            "Every method answers UNIMPLEMENTED (REST 501) naming it.",
            "",
            "| service | methods |",
            "|---|---|",
            *idle,
            "",
        ]
    return lines


def render() -> str:
    """The page ``docs/emulator-coverage.md``: every served API's methods, the storage door,
    the request fields not applied and the gcloud commands the tests run."""
    served = _served()
    lines = [
        "# What the emulator serves",
        "",
        "<!-- generated by `python3 -m trainpool.emulator.coverage`; "
        "tests/test_emulator_coverage.py fails when it drifts -->",
        "",
        "Every method of every Google API the emulator answers, from the installed Google "
        "clients (their gRPC stubs and HTTP rules), and what the emulator does with it, from "
        "its own service table. The same method is served on every door: gRPC "
        "(`VERTEX_AI_EMULATOR_HOST`), REST (`$TRAINPOOL_REST_URL/HOST/PATH`, and Google's own "
        "URLs through the HTTPS proxy under `trainpool exec`); v1beta1 where v1 is served.",
        "",
        "- **served**: answered as the API defines it (see [the emulator's guide]"
        "(guides/emulator/index.md) for its rules and their sources).",
        "- **refused**: answered UNIMPLEMENTED with the reason shown.",
        "- **not emulated**: answered UNIMPLEMENTED (REST 501) at once, naming the method "
        "and its service.",
        "- An API not on this page (`compute.googleapis.com`, `pubsub.googleapis.com`, ...): "
        "403 `SERVICE_DISABLED` naming it over REST and through the proxy, UNIMPLEMENTED "
        "over gRPC; never a call to Google.",
        "",
    ]
    for api in SERVED_APIS:
        lines += _api_section(api, served)
    lines += _storage_section() + _fields_section() + _gcloud_section()
    return "\n".join(lines) + "\n"


def _storage_section() -> list[str]:
    """The storage door's routes (:data:`ROUTES`) and what it does with them."""
    lines = [
        "## Cloud Storage (the storage door, JSON API)",
        "",
        "`STORAGE_EMULATOR_HOST`; `storage.googleapis.com` and `www.googleapis.com` through "
        "the proxy. Any other request answers 501 naming it. Uploads (simple, multipart, "
        "resumable) are read framed by `Content-Length`, `Transfer-Encoding: chunked` or "
        "`Transfer-Encoding: identity` (TensorFlow's); a bucket is deleted only when it holds "
        "no object (409 otherwise, nothing removed); a folder marker (an empty object named "
        "`dir/`) is kept as the folder.",
        "",
        "| HTTP | path | handler |",
        "|---|---|---|",
    ]
    return lines + [
        f"| {' '.join(methods)} | `{_cell(pattern.pattern)}` | `{handler.__name__}` |"
        for methods, pattern, handler in ROUTES
    ]


def _fields_section() -> list[str]:
    """The request fields the emulator does not apply (:func:`unapplied`)."""
    lines = [
        "",
        "## Fields of a request the emulator does not apply",
        "",
        "Every field of CustomJob, HyperparameterTuningJob, TrainingPipeline (its "
        "CustomJobSpec inputs) and PipelineJob that a client may set is applied, or listed "
        "here (`trainpool.emulator.field_coverage`, walked from the protos): **refused** with "
        "INVALID_ARGUMENT naming it, or **logged** (accepted, and the job's log says it is "
        "not applied). Never silently ignored.",
        "",
        "| field | action | why |",
        "|---|---|---|",
    ]
    return lines + [f"| `{f.path}` | {f.action} | {f.why.replace('|', '/')} |" for f in unapplied()]


def _gcloud_section() -> list[str]:
    """The gcloud and gsutil commands the tests run (:data:`GCLOUD_COMMANDS`)."""
    lines = [
        "",
        "## gcloud and gsutil commands the tests run",
        "",
        "| command, as typed | what the emulator does | test |",
        "|---|---|---|",
    ]
    return lines + [f"| `{c}` | {what} | `{test}` |" for c, what, test in GCLOUD_COMMANDS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write docs/emulator-coverage.md")
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE} is stale: run python3 -m trainpool.emulator.coverage", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
