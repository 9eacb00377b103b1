"""Stand-ins for the ``python:3.X-slim`` base images, made offline from Debian's packages.

A machine that cannot pull from Docker Hub (a sealed CI runner, a corporate network) can
still reach Debian's archive. ``mmdebstrap --variant=minbase`` makes a Debian root file
system from it, and ``docker import`` makes that an image (measured on these machines:
``reference/containers-here.md``). The image is laid out as the official ``python``
images are, so that Dockerfiles and commands written for them work: the interpreter is
``/usr/local/bin/python`` (and ``python3``, ``pip``, ``pip3``), first on ``PATH``, and
``pip install`` installs into ``/usr/local`` — a virtual environment there, since Debian
marks its own Python externally managed (PEP 668) and refuses ``pip install`` into it.
It holds Debian's ``ca-certificates`` too.

Behind a TLS-intercepting proxy (a corporate network, this machine's), a ``RUN pip install``
in a build fails with ``CERTIFICATE_VERIFY_FAILED`` unless the image trusts the proxy's CA.
So the stand-in carries a CA bundle (:func:`ca_bundle`): ``TRAINPOOL_CA_BUNDLE`` names a PEM
file, ``off`` none; by default it is this machine's own bundle, the file ``SSL_CERT_FILE``,
``REQUESTS_CA_BUNDLE``, ``PIP_CERT`` or ``CURL_CA_BUNDLE`` names, else the first of the
standard paths that exists (Debian's ``/etc/ssl/certs/ca-certificates.crt``, Fedora's
``/etc/pki/tls/certs/ca-bundle.crt``, Alpine's ``/etc/ssl/cert.pem``). Its certificates are
added to Debian's trust store the way ``update-ca-certificates(8)`` documents for local CAs
(one ``.crt`` each under ``/usr/local/share/ca-certificates/``, then ``update-ca-certificates``),
so OpenSSL, curl and Python's ``ssl`` trust them in ``/etc/ssl/certs/ca-certificates.crt``;
``PIP_CERT``, ``REQUESTS_CA_BUNDLE`` and ``SSL_CERT_FILE`` name that file, since pip and
requests trust certifi's own bundle otherwise (pip's "HTTPS Certificates" page). The label
:data:`CA_LABEL` holds the bundle's hash: a stand-in made with another bundle, or before
stand-ins carried one, is made again.

How it differs from the real image, which the job log and the image's labels say: the
Python is Debian's build of that suite's version (bookworm 3.11.2, not the newest 3.11),
only the suite's ``minbase`` packages are there, and it trusts the CA bundle besides
Debian's.

The stand-in is named :func:`stand_in_name` (``trainpool.local/stand-in/python:3.11-slim``),
never the public name, so it never shadows the real image on a machine that has it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainpool.home import Home

PREFIX = "trainpool.local/stand-in/"
LABEL = "org.trainpool.stand-in"
"""The label a stand-in carries: the public name it stands in for."""
DIFFERENCE_LABEL = "org.trainpool.stand-in.differs"
CA_BUNDLE_ENV = "TRAINPOOL_CA_BUNDLE"
"""The setting: a PEM file of the CAs stand-ins trust besides Debian's; ``off``: none; unset:
this machine's bundle (:func:`ca_bundle`). The emulator's alone, as ``TRAINPOOL_CONTAINERS``
is, so it lives here and not in :mod:`trainpool.config`, which components read."""
CA_LABEL = "org.trainpool.stand-in.ca-bundle"
"""The label of the CA bundle a stand-in trusts: ``sha256:HEX`` of its certificates, or
``none``; a stand-in without it was made before stand-ins carried one."""
NO_BUNDLE = "none"
CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE")
"""Variables that name this machine's CA bundle (OpenSSL, requests, pip, curl), in this order."""
CA_PATHS = (
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
)
"""Where Debian and Ubuntu, Fedora and RHEL, Alpine and macOS keep the system's bundle."""
TRUSTED = "/etc/ssl/certs/ca-certificates.crt"
"""Debian's bundle in the image, which ``update-ca-certificates`` writes."""
_CERTIFICATE = re.compile(
    r"-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+?-----END CERTIFICATE-----"
)


@dataclass(frozen=True)
class CaBundle:
    """The CA certificates a stand-in trusts besides Debian's: where they came from and their
    PEM blocks; ``label`` is their hash (:data:`CA_LABEL`)."""

    path: Path
    source: str
    """What named it: ``TRAINPOOL_CA_BUNDLE``, another variable, or ``the system's path``."""
    certificates: tuple[str, ...]

    @property
    def label(self) -> str:
        joined = "\n".join(self.certificates).encode()
        return "sha256:" + hashlib.sha256(joined).hexdigest()

    def describe(self) -> str:
        return (
            f"trusts the {len(self.certificates)} certificates of {self.path} (named by "
            f"{self.source}; {self.label[:19]}) besides Debian's own, added to the image's "
            f"{TRUSTED}, which PIP_CERT, REQUESTS_CA_BUNDLE and SSL_CERT_FILE name "
            f"({CA_BUNDLE_ENV}=off: none)"
        )


def _certificates(path: Path, named: str) -> tuple[str, ...]:
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError as err:
        raise ValueError(
            f"{named}: cannot read the CA bundle {str(path)!r} ({err.strerror}); accepted: a "
            f"readable PEM file of CA certificates, or {CA_BUNDLE_ENV}=off"
        ) from err
    found = tuple(m.group(0).replace("\r\n", "\n") for m in _CERTIFICATE.finditer(text))
    if not found:
        raise ValueError(
            f"{named}: {str(path)!r} holds no PEM certificate (-----BEGIN CERTIFICATE-----); "
            f"accepted: a PEM file of CA certificates, or {CA_BUNDLE_ENV}=off"
        )
    return found


def ca_bundle(environ: Mapping[str, str] | None = None) -> CaBundle | None:
    """The CA bundle stand-ins trust besides Debian's: ``TRAINPOOL_CA_BUNDLE`` (a PEM file;
    ``off``, ``0``, ``no`` or ``none``: no bundle), else this machine's (:data:`CA_VARIABLES`,
    then :data:`CA_PATHS`; never a local store's own bundle, which they name under ``trainpool
    exec``), else None. Raises ``ValueError`` for a bundle
    ``TRAINPOOL_CA_BUNDLE`` names that cannot be read or holds no certificate."""
    env = os.environ if environ is None else environ
    setting = env.get(CA_BUNDLE_ENV, "").strip()
    if setting.lower() in ("off", "0", "no", "none", "false"):
        return None
    if setting:
        path = Path(setting).expanduser()
        return CaBundle(path, CA_BUNDLE_ENV, _certificates(path, f"{CA_BUNDLE_ENV}={setting}"))
    named = [(env[v], v) for v in CA_VARIABLES if env.get(v)]
    for where, source in [*named, *((p, "the system's path") for p in CA_PATHS)]:
        path = Path(where)
        if path.is_file() and not _stores_own(path):
            try:
                return CaBundle(path, source, _certificates(path, source))
            except ValueError:
                continue  # not a bundle after all: the next one
    return None


def _stores_own(path: Path) -> bool:
    """Whether ``path`` is a local store's bundle (``Home.ca_bundle``, beside its database),
    which ``trainpool exec`` names in these variables: the emulator's own authority and
    per store, never the machine's."""
    home = Home(path.parent)
    return path.name == home.ca_bundle.name and home.database.exists()


def _bundle_label(bundle: CaBundle | None) -> str:
    return NO_BUNDLE if bundle is None else bundle.label


@dataclass(frozen=True)
class DebianBase:
    """A public base image and the Debian suite whose Python has its version."""

    suite: str
    python: str


BASES = {
    "python:3.9-slim": DebianBase("bullseye", "3.9"),
    "python:3.11-slim": DebianBase("bookworm", "3.11"),
    "python:3.13-slim": DebianBase("trixie", "3.13"),
}
"""What can be made here: Debian's bullseye has Python 3.9, bookworm 3.11, trixie 3.13."""


def stand_in_name(name: str) -> str:
    """The name the stand-in of public image ``name`` carries locally."""
    return PREFIX + name


def _require(name: str) -> DebianBase:
    if name not in BASES:
        raise ValueError(
            f"base image: {name!r} has no stand-in made from Debian's packages; accepted: "
            f"{', '.join(sorted(BASES))}"
        )
    return BASES[name]


def current(image: Any, bundle: CaBundle | None) -> bool:
    """Whether stand-in ``image`` (a docker-py ``Image``) trusts ``bundle``, no more, no less."""
    return (image.labels or {}).get(CA_LABEL) == _bundle_label(bundle)


def find(client: Any, name: str, bundle: CaBundle | None = None) -> Any | None:
    """The stand-in of ``name`` the engine has (a docker-py ``Image``) trusting ``bundle``, or
    None (none, or one made with another bundle or before stand-ins carried one)."""
    from docker import errors

    try:
        image = client.images.get(stand_in_name(name))
    except errors.ImageNotFound:
        return None
    return image if current(image, bundle) else None


def ensure(
    client: Any,
    name: str,
    mmdebstrap: str = "mmdebstrap",
    environ: Mapping[str, str] | None = None,
) -> Any:
    """The stand-in of public image ``name`` in the engine of docker-py ``client``, trusting
    :func:`ca_bundle`: the one it has, else one made now (about a minute and 250 MB; kept for
    every later use; one made with another bundle is replaced). Raises ``ValueError`` for a
    name with no stand-in or a bad ``TRAINPOOL_CA_BUNDLE``, and ``OSError`` when mmdebstrap is
    missing or fails (its output in the message)."""
    base = _require(name)
    bundle = ca_bundle(environ)
    found = find(client, name, bundle)
    if found is not None:
        return found
    program = shutil.which(mmdebstrap)
    if program is None:
        raise OSError(
            f"{mmdebstrap} is not installed: the stand-in of {name} is made with it from Debian's "
            "packages (apt-get install mmdebstrap)"
        )
    with tempfile.TemporaryDirectory(prefix="trainpool-base-") as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        trust = _trust_hooks(Path(tmp), bundle)
        made = subprocess.run(
            [
                program,
                "--variant=minbase",
                "--include=python3,python3-venv,ca-certificates",
                '--customize-hook=chroot "$1" python3 -m venv /usr/local',
                *trust,
                base.suite,
                str(rootfs),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if made.returncode != 0:
            raise OSError(
                f"mmdebstrap could not make Debian {base.suite} for the stand-in of {name} "
                f"(exit {made.returncode}):\n{made.stderr[-4000:]}"
            )
        _import(client, name, base, bundle, rootfs)
    image = find(client, name, bundle)
    if image is None:
        raise OSError(f"the engine did not keep the stand-in of {name} it imported")
    return image


def _trust_hooks(tmp: Path, bundle: CaBundle | None) -> list[str]:
    """mmdebstrap's hooks that make the image trust ``bundle`` (none without one), its
    certificates written under ``tmp`` first."""
    if bundle is None:
        return []
    # Debian's way for a local CA: a .crt each under /usr/local/share/ca-certificates
    local = tmp / "trainpool"
    local.mkdir()
    for number, certificate in enumerate(bundle.certificates):
        (local / f"ca-{number:04d}.crt").write_text(certificate + "\n")
    return [
        f"--customize-hook=copy-in {local} /usr/local/share/ca-certificates",
        '--customize-hook=chroot "$1" update-ca-certificates --fresh',
    ]


def _import(
    client: Any, name: str, base: DebianBase, bundle: CaBundle | None, rootfs: Path
) -> None:
    """Import ``rootfs`` into the engine as the stand-in of ``name``: its environment, and
    labels that say what it stands in for, how it differs and which bundle it trusts."""
    differs = (
        f"Debian {base.suite}'s Python {base.python} in a virtual environment at /usr/local; "
        "minbase packages only"
    )
    certificates = []
    if bundle is not None:
        differs += f"; {bundle.describe()}"
        certificates = [
            f"ENV {v}={TRUSTED}" for v in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")
        ]
    repository, tag = stand_in_name(name).rsplit(":", 1)
    client.api.import_image_from_file(
        str(rootfs),
        repository=repository,
        tag=tag,
        changes=[
            "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
            "ENV LANG=C.UTF-8",
            f"ENV PYTHON_VERSION={base.python}",
            *certificates,
            'CMD ["python3"]',
            f'LABEL {LABEL}="{name}"',
            f'LABEL {DIFFERENCE_LABEL}="{differs}"',
            f'LABEL {CA_LABEL}="{_bundle_label(bundle)}"',
        ],
    )
