"""``docker push`` and ``docker pull`` of Artifact Registry names, answered by the emulator.

Five of Google's training notebooks ``docker build`` an image, ``docker push`` it to Artifact
Registry (``LOCATION-docker.pkg.dev/PROJECT/REPO/IMAGE:TAG``) or Container Registry
(``gcr.io/PROJECT/IMAGE``), then name it in a CustomJob; ``gcloud ai custom-jobs create
--local-package-path`` pushes the image it builds the same way (through the ``docker``
command). The engine pushes, not the ``docker`` command, and nothing on this machine can
point an engine's push at the emulator without changing the engine's own configuration.
So ``trainpool exec`` (and :func:`trainpool.redirect.point_here`) put a ``docker`` first on
``PATH`` (:func:`install`: ``<root>/bin/docker``) that answers these two commands for those
registries, and runs the real ``docker`` for everything else, ``build`` and ``tag`` included:

- ``docker push NAME[:TAG]`` (``-a``/``--all-tags``, ``-q``/``--quiet``): the image must be in
  the engine (else docker's own words, "An image does not exist locally with the tag"); the
  emulator records it in its Artifact Registry (:func:`trainpool.emulator_client.registry.
  record_push`), where ``gcloud artifacts docker images list`` finds it, and refuses it as
  Artifact Registry does when the repository was never created ('name unknown: Repository
  "REPO" not found'). The engine keeps the image: it is this machine's registry, and a job
  naming the image runs it from there. Printed as docker prints a push.
- ``docker pull NAME``: what a push recorded as ``NAME`` in the emulator's Artifact Registry
  ("Image is up to date", or the tag put back on the pushed image if it moved in the engine
  since), else docker's "manifest unknown", whatever the engine holds under that name: a
  pull from Artifact Registry finds only what was pushed.
- ``docker build``: before the real ``docker`` builds, the emulator makes the Dockerfile's
  bases available to the engine (:func:`trainpool.emulator_client.registry.ensure_bases`):
  where a base cannot be pulled (no route to Docker Hub, as on a sealed network) and has an
  offline stand-in (``python:3.11-slim``, ...), the stand-in is tagged with its name, and the
  build's standard error says so and how it differs. ``FROM python:3.11-slim`` then builds
  here as on a user's machine, in ``gcloud ai custom-jobs create --local-package-path`` too
  (whose Dockerfile comes on standard input).

How it differs from a push to Google: no layer is uploaded, and the digest is the image's
id (its config's digest), not a registry manifest's. The shim says so on standard error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from trainpool.config import EMULATOR_ENV
from trainpool.home import Home

NAME = "docker"
GLOBAL_VALUED = {"--config", "-c", "--context", "-H", "--host", "-l", "--log-level"}
GLOBAL_VALUED |= {"--tlscacert", "--tlscert", "--tlskey"}
"""The ``docker`` command's global options that take a value (docker CLI 28)."""
VALUED = {"--platform"}
"""``push``'s and ``pull``'s options that take a value."""
BUILD_VALUED = {"--add-host", "--build-arg", "--cache-from", "--cgroup-parent", "--cpu-period"}
BUILD_VALUED |= {"--cpu-quota", "-c", "--cpu-shares", "--cpuset-cpus", "--cpuset-mems", "-f"}
BUILD_VALUED |= {"--file", "--iidfile", "--isolation", "--label", "-m", "--memory"}
BUILD_VALUED |= {"--memory-swap", "--network", "--platform", "--security-opt", "--shm-size"}
BUILD_VALUED |= {"-t", "--tag", "--target", "--ulimit", "--progress", "--secret", "--ssh"}
"""``docker build``'s options that take a value (the legacy builder's, docker CLI 28)."""
GCR = ("gcr.io", "us.gcr.io", "eu.gcr.io", "asia.gcr.io")


def install(home: Home, python: str | None = None) -> Path:
    """Write ``<root>/bin/docker`` (running :func:`main` with ``python``, default this
    interpreter); the folder, to put first on ``PATH``."""
    folder = home.root / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / NAME
    text = (
        f"#!{python or sys.executable}\n"
        "# trainpool exec: docker push/pull of Artifact Registry names answered by the emulator\n"
        "import sys\n"
        "from trainpool.redirect.docker import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    if not script.is_file() or script.read_text() != text:
        partial = script.with_name(f".{NAME}.{os.getpid()}")
        partial.write_text(text)
        partial.chmod(0o755)
        partial.replace(script)
    return folder


def real_docker(environ: dict[str, str] | None = None) -> str | None:
    """The ``docker`` on ``PATH`` that is not this one."""
    env = os.environ if environ is None else environ
    here = Path(__file__).resolve()
    for folder in env.get("PATH", "").split(os.pathsep):
        found = shutil.which(NAME, path=folder) if folder else None
        if found is None:
            continue
        try:
            head = Path(found).read_bytes()[:400]
        except OSError:
            continue
        if b"trainpool.redirect.docker" in head or Path(found).resolve() == here:
            continue
        return found
    return None


def emulated(image: str) -> bool:
    """Whether ``image`` names Artifact Registry's Docker registry or Container Registry."""
    host = image.split("/", 1)[0]
    return "/" in image and (host.endswith("-docker.pkg.dev") or host in GCR)


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``docker``'s global options, and the rest (the command and its arguments)."""
    given = list(argv)
    index = 0
    while index < len(given) and given[index].startswith("-"):
        option = given[index]
        index += 2 if option in GLOBAL_VALUED else 1
    return given[:index], given[index:]


def main(argv: Sequence[str]) -> int:
    """``docker ARGV``: push and pull of an emulated registry answered here, else the real
    ``docker``."""
    real = real_docker()
    global_options, rest = split_command(argv)
    command = rest[:2] if rest[:1] == ["image"] else rest[:1]
    verb = command[-1] if command else ""
    arguments = rest[len(command) :]
    if verb in ("push", "pull") and os.environ.get(EMULATOR_ENV):
        options, names = _options(arguments)
        if len(names) == 1 and emulated(names[0]):
            if real is None:
                print("docker: the docker command is not installed", file=sys.stderr)
                return 127
            engine = [real, *global_options]
            if verb == "push":
                return push(engine, names[0], options)
            return pull(engine, names[0], options)
    if real is None:
        print(
            "docker: the docker command is not installed (trainpool exec found none on PATH)",
            file=sys.stderr,
        )
        return 127
    if verb == "build" and os.environ.get(EMULATOR_ENV):
        given = build(arguments)
        if given is not None:
            return subprocess.run([real, *argv], input=given, check=False).returncode
    os.execv(real, [real, *argv])
    return 0  # not reached


def _options(arguments: Sequence[str]) -> tuple[set[str], list[str]]:
    options: set[str] = set()
    names: list[str] = []
    given = list(arguments)
    index = 0
    while index < len(given):
        item = given[index]
        if item in VALUED:
            index += 2
            continue
        if item.startswith("-"):
            options.add(item.split("=", 1)[0])
        else:
            names.append(item)
        index += 1
    return options, names


def _inspect(engine: list[str], ref: str) -> dict[str, object] | None:
    done = subprocess.run(
        [*engine, "image", "inspect", "--format", "{{json .}}", ref],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return None
    found: dict[str, object] = json.loads(done.stdout)
    return found


def _repository_and_tag(image: str) -> tuple[str, str]:
    last = image.rsplit("/", 1)[-1]
    if "@" in image:
        return image.split("@", 1)[0], ""
    if ":" in last:
        repository, _, tag = image.rpartition(":")
        return repository, tag
    return image, ""


def push(engine: list[str], image: str, options: set[str]) -> int:
    """``docker push image`` to the emulator's Artifact Registry."""
    import grpc

    from trainpool.emulator_client.registry import record_push

    repository, tag = _repository_and_tag(image)
    quiet = bool(options & {"-q", "--quiet"})
    if options & {"-a", "--all-tags"}:
        listed = subprocess.run(
            [*engine, "image", "ls", "--format", "{{.Tag}}", repository],
            capture_output=True,
            text=True,
            check=False,
        )
        tags = [t for t in listed.stdout.split() if t and t != "<none>"]
        if not tags:
            print(f"An image does not exist locally with the tag: {repository}", file=sys.stderr)
            return 1
    else:
        tags = [tag or "latest"]
    if not quiet:
        print(f"The push refers to repository [{repository}]", flush=True)
    for each in tags:
        ref = f"{repository}:{each}"
        found = _inspect(engine, ref)
        if found is None:
            print(f"An image does not exist locally with the tag: {ref}", file=sys.stderr)
            return 1
        image_id = str(found["Id"])
        layers = list((found.get("RootFS") or {}).get("Layers") or [])  # type: ignore[attr-defined]
        try:
            record_push(
                os.environ[EMULATOR_ENV],
                ref,
                image_id,
                int(str(found.get("Size") or 0)),
                str(found.get("Created") or ""),
            )
        except grpc.RpcError as err:
            print(err.details(), file=sys.stderr)  # Artifact Registry's words
            return 1
        manifest = json.dumps(
            {"schemaVersion": 2, "config": image_id, "layers": layers}, separators=(",", ":")
        )
        if quiet:
            print(ref)
            continue
        for layer in reversed(layers):
            print(f"{str(layer).split(':')[-1][:12]}: Pushed")
        print(f"{each}: digest: {image_id} size: {len(manifest)}", flush=True)
    print(
        "trainpool exec: recorded in the emulator's Artifact Registry; the image stays in the "
        "local container engine (no layer uploaded; its digest is the image's id)",
        file=sys.stderr,
    )
    return 0


def pull(engine: list[str], image: str, options: set[str]) -> int:
    """``docker pull image`` from the emulator's Artifact Registry: the image a push recorded
    there (:func:`trainpool.emulator_client.registry.pushed_image`), which the engine keeps,
    tagged ``image`` again if the tag has since moved in the engine; docker's "manifest
    unknown" when nothing was pushed as ``image``, as a pull from Artifact Registry says,
    whatever the engine happens to hold under that name."""
    from trainpool.emulator_client.registry import pushed_image

    repository, tag = _repository_and_tag(image)
    ref = image if "@" in image or tag else f"{image}:latest"
    wanted = tag or ("latest" if "@" not in image else image.split("@", 1)[1])
    recorded = pushed_image(os.environ[EMULATOR_ENV], ref)
    if recorded is None:
        print(
            f"Error response from daemon: manifest for {ref} not found: manifest unknown: "
            f'Failed to fetch "{wanted}" (trainpool exec: the emulator\'s Artifact Registry '
            "has no such image; push it first, under trainpool exec)",
            file=sys.stderr,
        )
        return 1
    found = _inspect(engine, recorded)
    if found is None:
        print(
            f"Error response from daemon: {ref}: the emulator's Artifact Registry has it "
            f"({recorded}), but the local container engine, which keeps pushed images, no longer "
            "does (removed since the push): push it again, under trainpool exec",
            file=sys.stderr,
        )
        return 1
    current = _inspect(engine, ref) if "@" not in ref else found
    status = "Image is up to date"
    if current is None or current["Id"] != recorded:
        subprocess.run([*engine, "tag", recorded, ref], check=True, capture_output=True)
        status = "Downloaded newer image"
    if options & {"-q", "--quiet"}:
        print(ref)
        return 0
    print(f"{wanted}: Pulling from {repository.split('/', 1)[1]}")
    print(f"Digest: {recorded}")
    print(f"Status: {status} for {ref}")
    print(ref)
    return 0


def build(arguments: Sequence[str]) -> bytes | None:
    """Before ``docker build ARGUMENTS``: the Dockerfile's bases made available to the engine
    by the emulator, what it says of them on standard error. The Dockerfile read from
    standard input (``-f -``) is returned, to be given to the real build; None otherwise."""
    from trainpool.emulator_client.registry import ensure_bases

    file, context, build_args = "", "", {}
    given = list(arguments)
    index = 0
    while index < len(given):
        item = given[index]
        option, equals, value = item.partition("=")
        if not item.startswith("--") and len(item) > 2 and item[:2] in BUILD_VALUED:
            option, equals, value = item[:2], "=", item[2:]  # -f- and -tNAME, as docker reads them
        if item.startswith("-") and option in BUILD_VALUED:
            if not equals:
                index += 1
                value = given[index] if index < len(given) else ""
            if option in ("-f", "--file"):
                file = value
            elif option == "--build-arg":
                key, has, val = value.partition("=")
                build_args[key] = val if has else os.environ.get(key, "")
        elif not item.startswith("-"):
            context = item
        index += 1
    if not context or context == "-" or "://" in context or context.startswith("git@"):
        return None
    stdin: bytes | None = None
    if file == "-":
        stdin = sys.stdin.buffer.read()
        text = stdin.decode("utf-8", "replace")
    else:
        path = Path(file) if file else Path(context) / "Dockerfile"
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None  # docker says what is wrong
    try:
        said = ensure_bases(os.environ[EMULATOR_ENV], text, build_args)
    except Exception as err:  # noqa: BLE001 - the build goes on as docker's own
        said = f"could not ask the emulator for the bases: {err}\n"
    for line in said.splitlines():
        print(f"trainpool exec: {line}", file=sys.stderr, flush=True)
    return stdin
