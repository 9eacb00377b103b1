"""Fail an image build when NCCL is missing or older than a minimum (default 2.7).

Runs inside the image being built (standard library only), as
``python3 check_nccl.py 2.7``. It reads the version from, in order: the
``NCCL_VERSION`` variable (NVIDIA's CUDA images set it), the ``libnccl2`` Debian
package, ``nccl.h``, then ``torch.cuda.nccl.version()``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable

_HEADERS = ("/usr/include/nccl.h", "/usr/local/cuda/include/nccl.h", "/usr/local/include/nccl.h")
Version = tuple[int, ...]


def parse_version(text: str) -> Version | None:
    """``2.21.5-1+cuda12.4`` → ``(2, 21, 5)``; None when there is no version."""
    found = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(part) for part in found.groups() if part is not None) if found else None


def _from_env() -> Version | None:
    return parse_version(os.environ.get("NCCL_VERSION", ""))


def _from_dpkg() -> Version | None:
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", "libnccl2"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return parse_version(out.stdout) if out.returncode == 0 else None


def _from_header() -> Version | None:
    for header in _HEADERS:
        if os.path.exists(header):
            with open(header) as handle:
                text = handle.read()
            parts = [
                re.search(rf"#define NCCL_{n}\s+(\d+)", text) for n in ("MAJOR", "MINOR", "PATCH")
            ]
            if all(parts):
                return tuple(int(p.group(1)) for p in parts if p)
    return None


def _from_torch() -> Version | None:
    try:
        import torch  # type: ignore[import-not-found]

        found = torch.cuda.nccl.version()
    except Exception:
        return None
    if isinstance(found, int):
        return (found // 1000, found % 1000 // 100, found % 100)
    return tuple(found)


SOURCES: tuple[tuple[str, Callable[[], Version | None]], ...] = (
    ("NCCL_VERSION", _from_env),
    ("dpkg libnccl2", _from_dpkg),
    ("nccl.h", _from_header),
    ("torch.cuda.nccl", _from_torch),
)


def main(argv: list[str]) -> int:
    minimum = parse_version(argv[0] if argv else "2.7")
    if minimum is None:
        print(
            f"check_nccl: minimum {argv[0]!r} is not a version; accepted: e.g. 2.7", file=sys.stderr
        )
        return 2
    wanted = ".".join(map(str, minimum))
    for name, source in SOURCES:
        version = source()
        if version is None:
            continue
        found = ".".join(map(str, version))
        if version < minimum:
            print(
                f"NCCL {found} (from {name}) is older than {wanted}: the Reduction Server "
                f"plugin needs NCCL >= {wanted}; use a base image with a newer NCCL",
                file=sys.stderr,
            )
            return 1
        print(f"NCCL {found} (from {name}) >= {wanted}: fine for the Reduction Server plugin")
        return 0
    print(
        f"NCCL not found (looked at {', '.join(n for n, _ in SOURCES)}): the Reduction Server "
        f"plugin needs NCCL >= {wanted}; use a CUDA base image that carries NCCL",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
