"""Credentials in a build context, found by content: whatever the file is called, wherever
in the file they are.

A name list (the ``.dockerignore`` secret patterns) misses ``key.json`` renamed to
``model.json``; these checks read the file, all of it, a chunk at a time (a
:class:`Scanner` is fed the same chunks the digest reads, so a context is read once):

- a **PEM private key**: a whole ``-----BEGIN ... PRIVATE KEY-----`` ... ``-----END ...
  PRIVATE KEY-----`` block (not a mention of the header), also indented (YAML), written
  as an escaped string (``\\n`` for each line break, as in a service-account JSON or a
  notebook's cell), split across a notebook's JSON strings, or after any amount of other
  content;
- a **Google credential JSON**: ``"type": "service_account"`` with a ``"private_key"``, or
  ``"type": "authorized_user"`` with a ``"refresh_token"``, at any depth (inside a list,
  after a byte-order mark, as an escaped string inside a notebook);
- a **PKCS#12** (``.p12``/``.pfx``) bundle, by its leading bytes.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from trainpool.errors import InputError

CHUNK = 1 << 20
MAX_BLOCK = 16 << 10
"""A PEM block or a credential JSON object spans at most this many bytes (an RSA-4096 key
is about 3.3 KB); the chunks a file is read in overlap by :data:`OVERLAP`."""
OVERLAP = 4 * MAX_BLOCK
_BEGIN = re.compile(rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")
_END = re.compile(rb"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----")
# between the markers: base64, PEM headers (Proc-Type: 4,ENCRYPTED), white space, and what
# a PEM written as a string adds: escaped line breaks and quotes, a notebook's `", "`
_BODY = re.compile(rb'(?:[A-Za-z0-9+/=:,.\-\s"\']|\\+[nr"])+')
_BREAK = rb"(?:\r?\n|(?:\\+r)?\\+n)"
_FRAMED = re.compile(rb"%s.*%s[\s\"',]*" % (_BREAK, _BREAK), re.DOTALL)
"""A block's body starts with a line break (real or escaped) and ends with one, perhaps
followed by the quotes and commas that close a notebook's line."""
_BASE64 = re.compile(rb"[A-Za-z0-9+/]")
_JSON_TYPE = re.compile(rb'\\*"type\\*"\s*:\s*\\*"(service_account|authorized_user)\\*"')
_JSON_SECRET = {
    b"service_account": (
        re.compile(rb'\\*"private_key\\*"\s*:'),
        "a service-account key (JSON with type service_account and private_key)",
    ),
    b"authorized_user": (
        re.compile(rb'\\*"refresh_token\\*"\s*:'),
        "a user credential (JSON with type authorized_user and refresh_token)",
    ),
}
_PKCS12_VERSION = b"\x02\x01\x03\x30"  # PFX ::= SEQUENCE { version INTEGER (3), authSafe ...


def _pem(window: bytes) -> bool:
    """Whether ``window`` holds a whole PEM private-key block (linear in its size: each
    BEGIN is paired with the next END, unless another BEGIN comes first)."""
    begins = [(m.start(), m.end()) for m in _BEGIN.finditer(window)]
    ends = [m.start() for m in _END.finditer(window)]
    for n, (_, after) in enumerate(begins):
        end = ends[bisect.bisect_left(ends, after)] if ends and ends[-1] >= after else None
        if end is None:
            return False
        if end - after > MAX_BLOCK or (n + 1 < len(begins) and begins[n + 1][0] < end):
            continue
        body = window[after:end]
        if _BODY.fullmatch(body) and _FRAMED.fullmatch(body) and _BASE64.search(body):
            return True
    return False


def _json(window: bytes) -> str | None:
    """The kind of Google credential JSON in ``window``: a ``type`` marker with its secret
    field within :data:`MAX_BLOCK` bytes (linear: positions are found once, then paired)."""
    found = [(m.start(), m.group(1)) for m in _JSON_TYPE.finditer(window)]
    for name in {kind for _, kind in found}:
        secret, kind = _JSON_SECRET[name]
        secrets_at = [m.start() for m in secret.finditer(window)]
        for at, _ in (f for f in found if f[1] == name):
            n = bisect.bisect_left(secrets_at, at - MAX_BLOCK)
            if n < len(secrets_at) and secrets_at[n] <= at + MAX_BLOCK:
                return kind
    return None


def _is_pkcs12(data: bytes) -> bool:
    if len(data) < 8 or data[0] != 0x30:
        return False
    length_bytes = data[1] & 0x7F if data[1] & 0x80 else 0
    start = 2 + length_bytes
    return data[start : start + 4] == _PKCS12_VERSION


class Scanner:
    """Fed a file's bytes in order (any chunk sizes), says what credential it holds."""

    def __init__(self) -> None:
        self.kind: str | None = None
        self._carry = b""
        self._started = False

    def feed(self, chunk: bytes) -> str | None:
        """The kind of credential found so far (None: none yet)."""
        if self.kind is not None or not chunk:
            return self.kind
        if not self._started:
            self._started = True
            if _is_pkcs12(chunk):
                self.kind = "a PKCS#12 key bundle"
                return self.kind
        window = self._carry + chunk
        if b"type" in window:
            self.kind = _json(window)
        if self.kind is None and b"PRIVATE KEY-----" in window and _pem(window):
            self.kind = "a PEM private key"
        self._carry = window[-OVERLAP:]
        return self.kind


def credential_kind(path: Path) -> str | None:
    """What kind of credential ``path`` holds, or None when it holds none that is known.
    Reads the whole file, :data:`CHUNK` bytes at a time."""
    scanner = Scanner()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                if scanner.feed(chunk) is not None:
                    break
    except OSError:
        return None
    return scanner.kind


class CredentialInContext(InputError):
    """A file of the build context holds a credential; it would be baked into the image."""

    def __init__(self, rel_path: str, kind: str) -> None:
        self.rel_path = rel_path
        super().__init__(
            f"source_dir: {rel_path} holds {kind}; it would be copied into the image. "
            "accepted: a context without credentials (move the file out of the folder, or list "
            "it in the folder's .dockerignore); replicas get credentials from their service account"
        )
