"""Image references: ``REGISTRY/REPO[:TAG][@sha256:HEX]``, parsed and checked."""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = r"(?:[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*(?::\d+)?/)?"
_REPO = re.compile(rf"^{_HOST}{_COMPONENT}(?:/{_COMPONENT})*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
ACCEPTED = "REGISTRY/PATH/NAME, optionally :TAG and @sha256:<64 hex>, lowercase path"


@dataclass(frozen=True)
class ImageRef:
    repository: str
    tag: str = ""
    digest: str = ""  # "sha256:<hex>"

    def __str__(self) -> str:
        text = self.repository
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    @property
    def named(self) -> str:
        """``repository:tag`` (tag ``latest`` when none)."""
        return f"{self.repository}:{self.tag or 'latest'}"


def parse(uri: str, field: str = "image_uri") -> ImageRef:
    """Parse ``uri``; ValueError naming ``field`` and the accepted form when it is malformed."""
    rest, _, digest = uri.strip().partition("@")
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    repository, tag = (rest[:colon], rest[colon + 1 :]) if colon > slash else (rest, "")
    if (
        not _REPO.match(repository)
        or (colon > slash and not _TAG.match(tag))
        or ("@" in uri and not _DIGEST.match(digest))
    ):
        raise ValueError(f"{field}: {uri!r} is not an image reference; accepted: {ACCEPTED}")
    return ImageRef(repository, tag, digest)
