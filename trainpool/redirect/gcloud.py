"""gcloud under ``trainpool exec``: every API it knows pointed at the emulator's REST door.

gcloud speaks HTTP/JSON to ``https://{api}.googleapis.com``; its ``api_endpoint_overrides``
properties send an API elsewhere (gcloud's ``api_lib/util/apis_internal.py``
``_GetEffectiveApiEndpoint``: an override whose path is not ``/`` is used as given). The
emulator's store gets a gcloud configuration directory of its own, ``<root>/gcloud``
(``CLOUDSDK_CONFIG``), whose one configuration overrides every API of
``data/gcloud_apis.csv`` with ``http://127.0.0.1:PORT/<the API's host><its base path>``: the
REST door serves the APIs the emulator emulates and answers every other one at once with
403 naming it, so no gcloud command reaches Google, and the token gcloud sends (the doors'
secret, ``auth/access_token_file``) never leaves the machine. Usage reporting, the update
check and the metadata-server probe are off, as on a machine without network.

The user's own gcloud configuration is not read under ``trainpool exec`` (its account and
properties belong to Google Cloud); properties set under ``trainpool exec`` (``gcloud
config set ai/region ...``) stay in the store's configuration. Cloud Storage goes to the
storage door (``CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE``, from the emulator).
"""

from __future__ import annotations

import configparser
import csv
import io
from functools import cache, lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from trainpool.redirect.files import write_private

DATA = Path(__file__).with_name("data") / "gcloud_apis.csv"
CONFIGURATION = "default"
ALIASES = {"ai": "https://aiplatform.googleapis.com/"}
"""Properties whose commands reach another host than their name says (``gcloud ai`` is
aiplatform)."""
QUIET = {
    "core": {"disable_usage_reporting": "True", "check_gce_metadata": "False"},
    "component_manager": {"disable_update_check": "True"},
    "survey": {"disable_prompts": "True"},
}


@cache
def _apis() -> tuple[tuple[str, str], ...]:
    text = "".join(line for line in DATA.read_text().splitlines(True) if not line.startswith("#"))
    return tuple(
        (row["property"], ALIASES.get(row["property"], row["base_url"]))
        for row in csv.DictReader(io.StringIO(text))
    )


def apis() -> dict[str, str]:
    """gcloud's API names (override properties) -> base URL."""
    return dict(_apis())


def overrides(rest_address: str) -> dict[str, str]:
    """Every API's override: the REST door, the API's host, its base path."""
    found = {}
    for name, base in _apis():
        url = urlsplit(base)
        found[name] = f"{rest_address.rstrip('/')}/{url.netloc}{url.path or '/'}"
    return found


def _parser() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    return parser


@lru_cache(maxsize=16)
def _fresh_text(rest_address: str, ca_bundle: Path | None) -> str:
    """A new configuration's text, made once per door: :func:`configure`'s for a folder
    that has none yet (every replica's first start)."""
    return _render(_parser(), rest_address, ca_bundle)


def _render(parser: configparser.ConfigParser, rest_address: str, ca_bundle: Path | None) -> str:
    core = {**QUIET["core"]}
    if ca_bundle is not None:
        core["custom_ca_certs_file"] = str(ca_bundle)
    sections = {**QUIET, "core": core, "api_endpoint_overrides": overrides(rest_address)}
    for section, values in sections.items():
        if not parser.has_section(section):
            parser.add_section(section)
        for key, value in values.items():
            parser.set(section, key, value)
    buffer = io.StringIO()
    parser.write(buffer)
    return buffer.getvalue()


def configure(config_dir: Path, rest_address: str, ca_bundle: Path | None = None) -> Path:
    """Write the store's gcloud configuration (its overrides and quiet settings, and the
    CA bundle that trusts the emulator's HTTPS proxy; any other property already set there
    kept); returns ``config_dir``."""
    config_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    (config_dir / "configurations").mkdir(mode=0o700, exist_ok=True)
    path = config_dir / "configurations" / f"config_{CONFIGURATION}"
    if path.is_file():  # the properties set there kept
        parser = _parser()
        parser.read(path, encoding="utf-8")
        text = _render(parser, rest_address, ca_bundle)
    else:  # a replica's first start: the same text for every one
        text = _fresh_text(rest_address, ca_bundle)
    write_private(path, text)
    write_private(config_dir / "active_config", CONFIGURATION)
    return config_dir
