"""Credentials in a build context, found by content: whatever the file is called.

A name list (the ``.dockerignore`` secret patterns) misses ``key.json`` renamed to
``model.json``; these checks read the file: a Google service-account or user
credential JSON, a PEM private key, a PKCS#12 (``.p12``/``.pfx``) bundle.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from trainpool.errors import InputError

MAX_READ = 1 << 20
_PEM = re.compile(
    rb"^-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\r?\n"  # a whole block, not a mention of one
    rb"[A-Za-z0-9+/=:,.\- \r\n]+?"
    rb"^-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    re.MULTILINE,
)
_PKCS12_VERSION = b"\x02\x01\x03\x30"  # PFX ::= SEQUENCE { version INTEGER (3), authSafe ...


def _json_kind(data: bytes) -> str | None:
    if not data.lstrip().startswith(b"{"):
        return None
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict):
        return None
    if doc.get("type") == "service_account" and "private_key" in doc:
        return "a service-account key (JSON with type service_account and private_key)"
    if doc.get("type") == "authorized_user" and "refresh_token" in doc:
        return "a user credential (JSON with type authorized_user and refresh_token)"
    return None


def _is_pkcs12(data: bytes) -> bool:
    if len(data) < 8 or data[0] != 0x30:
        return False
    length_bytes = data[1] & 0x7F if data[1] & 0x80 else 0
    start = 2 + length_bytes
    return data[start : start + 4] == _PKCS12_VERSION


def credential_kind(path: Path) -> str | None:
    """What kind of credential ``path`` holds, or None when it holds none that is known."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_READ)
    except OSError:
        return None
    if _PEM.search(data):
        return "a PEM private key"
    if _is_pkcs12(data):
        return "a PKCS#12 key bundle"
    return _json_kind(data)


class CredentialInContext(InputError):
    """A file of the build context holds a credential; it would be baked into the image."""

    def __init__(self, rel_path: str, kind: str) -> None:
        self.rel_path = rel_path
        super().__init__(
            f"source_dir: {rel_path} holds {kind}; it would be copied into the image. "
            "accepted: a context without credentials (move the file out of the folder, or list "
            "it in the folder's .dockerignore); replicas get credentials from their service account"
        )
