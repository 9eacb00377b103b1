"""Every client that speaks HTTPS to Google, under ``trainpool exec``, through the emulator's
HTTPS proxy: curl, gsutil, gcloud's direct Cloud Storage reads, TensorFlow's file system,
Python's ``requests``, gRPC clients outside the site hook.

The proxy (``trainpool.emulator.proxy``) answers Google's API hosts itself, with a
certificate of the store's authority, refuses other Google hosts by name and passes every
other host through. This module gives a command what it takes to use it:

- ``HTTPS_PROXY``/``https_proxy`` (loopback stays direct: ``NO_PROXY``/``no_proxy``);
- the store's CA bundle (the public roots and the authority) where each client reads one:
  ``SSL_CERT_FILE`` (OpenSSL, Python's ``ssl``), ``REQUESTS_CA_BUNDLE`` (requests, pip),
  ``CURL_CA_BUNDLE`` (curl, TensorFlow's Cloud Storage file system),
  ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`` (gRPC), ``HTTPLIB2_CA_CERTS`` (httplib2: gsutil's
  JSON API client, which reads no other once ``ca_certificates_file`` is set, gsutil's
  ``gslib/utils/boto_util.py``), gcloud's ``core/custom_ca_certs_file`` (:mod:`.gcloud`) and
  gsutil's ``ca_certificates_file``, and ``CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE`` too: a value
  of it in the caller's environment would win over the configuration (gcloud's property
  order), and gcloud hands it to gsutil;
- credentials that are the doors' secret, for clients that refresh a token rather than
  hold one: gsutil's boto file (``gs_oauth2_refresh_token``; gsutil asks Google's token
  endpoint, which the proxy takes to the emulator), and Application Default Credentials of
  the ``authorized_user`` kind (google-auth, TensorFlow), so no key of the user's real
  account is used and none of the store's reaches Google.

Files are written in the store (``Home.gcloud_config``, ``Home.boto_config``), 0600, or,
for a process with a configuration folder of its own (a replica, a pipeline run's tasks),
in that folder (``at``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from trainpool.home import Home
from trainpool.redirect.files import write_private

CLIENT_ID = "trainpool-emulator"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
CA_VARIABLES = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
    "HTTPLIB2_CA_CERTS",
    "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE",
)


def _write_private(path: Path, text: str) -> Path:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return write_private(path, text)


def boto_config(
    home: Home, proxy_address: str, secret: str, project: str, path: Path | None = None
) -> Path:
    """gsutil's configuration (at ``path``, default the store's): Cloud Storage through the
    proxy, the secret as its refresh token, few retries (a refused call fails in seconds,
    not minutes)."""
    host, _, port = proxy_address.removeprefix("http://").rpartition(":")
    text = (
        "# written by trainpool exec: gsutil against the trainpool emulator\n"
        "[Credentials]\n"
        f"gs_oauth2_refresh_token = {secret}\n"
        "[OAuth2]\n"
        f"client_id = {CLIENT_ID}\n"
        f"client_secret = {CLIENT_ID}\n"
        "[Boto]\n"
        f"proxy = {host}\n"
        f"proxy_port = {port}\n"
        f"ca_certificates_file = {home.ca_bundle}\n"
        "https_validate_certificates = True\n"
        "num_retries = 2\n"
        "max_retry_delay = 2\n"
        "[GSUtil]\n"
        f"default_project_id = {project}\n"
        "prefer_api = json\n"
    )
    return _write_private(path or home.boto_config, text)


def adc(home: Home, secret: str, folder: Path | None = None) -> Path:
    """Application Default Credentials whose refresh token is the secret (in ``folder``,
    default the store's gcloud configuration)."""
    credentials = dict(
        type="authorized_user", client_id=CLIENT_ID, client_secret=CLIENT_ID, refresh_token=secret
    )
    return _write_private(
        (folder or home.gcloud_config) / "application_default_credentials.json",
        json.dumps(credentials),
    )


def variables(
    env: Mapping[str, str], home: Home, proxy_address: str, project: str, at: Path | None = None
) -> dict[str, str]:
    """The variables that send a command's HTTPS through the proxy, over ``env`` (gsutil's
    and ADC's files in the folder ``at``, default the store's)."""
    secret = home.storage_token.read_text(encoding="utf-8").strip()
    kept = [h for h in (env.get("NO_PROXY") or env.get("no_proxy") or "").split(",") if h]
    no_proxy = ",".join(dict.fromkeys([*LOOPBACK, *kept]))
    out = {
        "HTTPS_PROXY": proxy_address,
        "https_proxy": proxy_address,
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
        "BOTO_CONFIG": str(
            boto_config(home, proxy_address, secret, project, at and at / "boto.cfg")
        ),
        "GOOGLE_APPLICATION_CREDENTIALS": str(adc(home, secret, at)),
    }
    out.update({name: str(home.ca_bundle) for name in CA_VARIABLES})
    return out
