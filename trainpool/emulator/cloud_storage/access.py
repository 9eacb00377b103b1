"""Who may use the Cloud Storage door: whoever proves the root's secret, so its owner only.

The door is a loopback port (the clients speak HTTP, not a Unix socket), which every local
user can connect to. Each emulator start makes a random secret and keeps it only where
its owner can read it: ``<root>/emulator.lock`` (the address, mode 0600) and
``<root>/storage.token`` (the secret alone, mode 0600), in the 0700 root. A request
proves it one of two ways:

- **a path prefix**: ``http://127.0.0.1:PORT/<secret>/storage/v1/...``. google-cloud-storage
  keeps the path of ``STORAGE_EMULATOR_HOST`` for every URL it makes (JSON API, uploads,
  downloads: ``google/cloud/storage/blob.py``'s ``_DOWNLOAD_URL_TEMPLATE`` and
  ``_BASE_UPLOAD_TEMPLATE`` start with ``{hostname}``, the API base URL), so
  ``STORAGE_EMULATOR_HOST=http://127.0.0.1:PORT/<secret>`` is all it needs;
- **a bearer token**: ``Authorization: Bearer <secret>``. gcloud drops a path prefix for
  uploads (apitools sets the absolute ``/upload/storage/v1/...`` and
  ``/resumable/upload/storage/v1/...`` paths, ``apitools/base/py/transfer.py``
  ``Upload.ConfigureRequest``), but with ``auth/access_token_file`` it sends the file's
  token on every request (``CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=<root>/storage.token``).

A request with neither is answered 403 before its body is read or anything is touched.

Clients that hold a refresh token rather than a token (gsutil's boto configuration,
Application Default Credentials of the ``authorized_user`` kind, TensorFlow's Cloud Storage
file system) get one from Google's token endpoint; the doors answer it too
(:func:`token_grant`, at the paths of :data:`TOKEN_PATHS`): the refresh token ``trainpool
exec`` gives them is the secret, and so is the token it is exchanged for. Any other grant
is refused as Google's endpoint refuses it (400, ``invalid_grant``).
Standard library only.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path

SECRET_BYTES = 24
TOKEN_PATHS = ("/token", "/oauth2/v4/token", "/oauth2/v3/token")
"""Where Google's clients exchange a refresh token (``oauth2.googleapis.com/token``, and the
older ``www.googleapis.com/oauth2/v4/token``)."""
TOKEN_LIFETIME_S = 3599


def new_secret() -> str:
    """A fresh random secret of 192 bits, in hex (a path segment, never taken for an option)."""
    return secrets.token_hex(SECRET_BYTES)


@dataclass(frozen=True)
class DoorKey:
    """The secret of one door and where it listens (``base``: ``http://127.0.0.1:PORT``)."""

    base: str
    secret: str
    token_file: Path

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/<secret>``: what ``STORAGE_EMULATOR_HOST`` is set to."""
        return f"{self.base}/{self.secret}"

    def admit(self, path: str, authorization: str | None) -> str | None:
        """The request's path without the secret when the request proves it, else None."""
        head, sep, rest = path[1:].partition("/")
        if path.startswith("/") and hmac.compare_digest(head.encode(), self.secret.encode()):
            return "/" + rest if sep else "/"
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            token.strip().encode(), self.secret.encode()
        ):
            return path
        return None

    def client_env(self) -> dict[str, str]:
        """The environment that points google-cloud-storage and gcloud at this door.

        ``CLOUDSDK_AUTH_ACCESS_TOKEN_FILE`` makes gcloud send the secret as its token (so
        ``auth/disable_credentials`` must stay unset); a project still has to be given
        (``CLOUDSDK_CORE_PROJECT``, ``GOOGLE_CLOUD_PROJECT``) by whoever knows it.
        """
        return {
            "STORAGE_EMULATOR_HOST": self.url,
            "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE": f"{self.base}/",
            "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE": str(self.token_file),
        }


def token_grant(secret: str, body: bytes) -> tuple[int, dict[str, object]]:
    """Google's token endpoint for a form-encoded ``body`` (RFC 6749 section 6): the
    secret as an access token when the refresh token is the secret, else 400
    ``invalid_grant``/``unsupported_grant_type`` as the endpoint answers."""
    from urllib.parse import parse_qs

    form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
    grant = form.get("grant_type", "")
    if grant != "refresh_token":
        return 400, {
            "error": "unsupported_grant_type",
            "error_description": f"the trainpool emulator issues tokens for refresh_token "
            f"grants only, not {grant[:80]!r}; a service account key or a metadata server "
            "are not emulated",
        }
    if not hmac.compare_digest(form.get("refresh_token", "").encode(), secret.encode()):
        return 400, {
            "error": "invalid_grant",
            "error_description": "the refresh token is not this emulator's (trainpool exec "
            "gives clients the one it takes)",
        }
    return 200, {
        "access_token": secret,
        "expires_in": TOKEN_LIFETIME_S,
        "token_type": "Bearer",
        "scope": "https://www.googleapis.com/auth/cloud-platform",
    }
