"""Does an image exist where a pipeline task will pull it from?

- An image on a loopback registry (``localhost:PORT/...``, ``127.0.0.1:PORT/...``) is
  asked there, over plain HTTP without a token, as Docker itself treats local registries.
- With ``VERTEX_AI_EMULATOR_HOST`` set, any other image is looked up in the local image
  store (``$TRAINPOOL_HOME/images``); the emulator does not pull pipeline tasks' images
  (they run with this machine's Python), so :func:`missing` says so as a note, not a refusal.
- Otherwise the image's own registry is asked through the Docker Registry HTTP API v2
  (``HEAD /v2/<name>/manifests/<digest or tag>``; Artifact Registry and Container
  Registry speak it, cloud.google.com/artifact-registry/docs/docker/pushing-and-pulling),
  with an OAuth token from Application Default Credentials.
"""

from __future__ import annotations

from pathlib import Path

from trainpool import emulator_client
from trainpool.config import emulator_host
from trainpool.images import image_ref, image_store

MANIFEST_TYPES = ", ".join(
    [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)
_LOOPBACK = ("localhost:", "127.0.0.1:", "[::1]:")


def _manifest_url(ref: image_ref.ImageRef) -> tuple[str, bool]:
    """``(url, loopback)`` of the manifest ``ref`` names."""
    host, _, name = ref.repository.partition("/")
    if "." not in host and ":" not in host and host != "localhost":
        host, name = "registry-1.docker.io", ref.repository  # Docker Hub short names
    loopback = host.startswith(_LOOPBACK)
    scheme = "http" if loopback else "https"
    return f"{scheme}://{host}/v2/{name}/manifests/{ref.digest or ref.tag or 'latest'}", loopback


def _token() -> str:
    import google.auth
    from google.auth.transport.requests import Request

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    credentials.refresh(Request())
    return str(credentials.token)


def local_note(image: str, root: Path | None = None) -> str | None:
    """With the emulator: a note when ``image`` is not in the local image store, else None."""
    store = emulator_client.current(root).resolved()
    if image_store.lookup(image, store.root) is not None:
        return None
    return (
        f"components image {image!r} is not in the local image store at {store.images}: "
        "the emulator runs its tasks with this machine's trainpool (`trainpool publish --local` "
        "puts it there)"
    )


def on_emulator_store(image: str) -> bool:
    """Whether ``image`` is looked up in the local store rather than asked of a registry."""
    url, loopback = _manifest_url(image_ref.parse(image, "image"))
    return bool(emulator_host()) and not loopback


def missing(image: str) -> str | None:
    """Why ``image`` cannot be pulled from its registry (a sentence), or None when it exists."""
    import requests

    url, loopback = _manifest_url(image_ref.parse(image, "image"))
    headers = {"Accept": MANIFEST_TYPES}
    if not loopback:
        headers["Authorization"] = f"Bearer {_token()}"
    try:
        answer = requests.head(url, headers=headers, timeout=15, allow_redirects=True)
    except requests.RequestException as err:
        return f"its registry did not answer ({url}: {err})"
    if answer.status_code == 200:
        return None
    if answer.status_code == 404:
        return f"the registry has no such manifest ({url}: 404)"
    return f"the registry refused to say ({url}: HTTP {answer.status_code})"
