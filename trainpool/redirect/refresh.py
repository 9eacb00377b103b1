"""Rebuild ``data/gcloud_apis.csv``, every API gcloud can be pointed elsewhere, from gcloud.

``python3 -m trainpool.redirect.refresh [--sdk DIR] [--check]`` reads the installed Google
Cloud CLI: the names of its ``api_endpoint_overrides/*`` properties
(``lib/googlecloudsdk/core/properties.py``, ``_SectionApiEndpointOverrides``) and each API's
base URL (``lib/googlecloudsdk/generated_clients/apis/apis_map.py``, the default version's
``base_url``; ``https://NAME.googleapis.com/`` for a property with no client there).
``trainpool exec`` points every one of them at the emulator's REST door, which serves the
APIs it emulates and refuses the others by name, so no gcloud command reaches Google.
``--check`` exits 1 when the file differs from what the installed gcloud gives.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import sys
from pathlib import Path

DATA = Path(__file__).with_name("data") / "gcloud_apis.csv"
HEADER = (
    "# The API names of gcloud's api_endpoint_overrides properties and each API's base URL,\n"
    "# from the Google Cloud CLI {version} (lib/googlecloudsdk/core/properties.py and\n"
    "# generated_clients/apis/apis_map.py); regenerate: python3 -m trainpool.redirect.refresh\n"
    "property,base_url\n"
)


def sdk_root() -> Path | None:
    found = shutil.which("gcloud")
    if found is None:
        return None
    root = Path(found).resolve().parent.parent
    return root if (root / "lib" / "googlecloudsdk").is_dir() else None


def _properties(sdk: Path) -> list[str]:
    text = (sdk / "lib/googlecloudsdk/core/properties.py").read_text()
    start = text.index("class _SectionApiEndpointOverrides")
    end = text.index("\nclass ", start + 10)
    return re.findall(r"self\._Add\(\s*'([a-z0-9_]+)'", text[start:end])


def _base_urls(sdk: Path) -> dict[str, str]:
    """API -> base URL of its default version (apis_map's ``MAP``)."""
    tree = ast.parse((sdk / "lib/googlecloudsdk/generated_clients/apis/apis_map.py").read_text())
    urls: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Dict) and node.keys and isinstance(node.keys[0], ast.Constant)
        ):
            continue
        for key, versions in zip(node.keys, node.values, strict=False):
            if not (isinstance(key, ast.Constant) and isinstance(versions, ast.Dict)):
                continue
            chosen = ""
            for definition in versions.values:
                if not isinstance(definition, ast.Call):
                    continue
                source = ast.unparse(definition)
                url = re.search(r"base_url='([^']+)'", source)
                if url and (not chosen or "default_version=True" in source):
                    chosen = url.group(1)
            if chosen:
                urls.setdefault(str(key.value), chosen)
    return urls


def rows(sdk: Path) -> str:
    version = (sdk / "VERSION").read_text().strip() if (sdk / "VERSION").is_file() else "?"
    urls = _base_urls(sdk)
    lines = [HEADER.format(version=version)]
    for name in sorted(set(_properties(sdk))):
        lines.append(f"{name},{urls.get(name, f'https://{name}.googleapis.com/')}\n")
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdk", type=Path, default=None, help="the Google Cloud CLI's root")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    args = parser.parse_args(argv)
    sdk = args.sdk or sdk_root()
    if sdk is None:
        print("gcloud is not installed here; give --sdk DIR", file=sys.stderr)
        return 2
    text = rows(sdk)
    if args.check:
        return 0 if DATA.read_text() == text else 1
    DATA.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
