"""The certificates of the emulator's HTTPS proxy: a certificate authority of one start, and
the certificate it signs for Google's API hosts.

A client reaches ``https://storage.googleapis.com`` or ``https://us-central1-aiplatform.googleapis.com``
through the proxy (:mod:`.server`), which answers TLS for that host itself. The client
trusts it because the commands ``trainpool exec`` starts are given a CA bundle
(:data:`trainpool.home.Home.ca_bundle`: the public roots of certifi, the roots this machine
trusts, plus this authority)
by the variables each client reads (``SSL_CERT_FILE``, ``REQUESTS_CA_BUNDLE``,
``CURL_CA_BUNDLE``, gcloud's ``core/custom_ca_certs_file``, gsutil's
``ca_certificates_file``). Nothing else trusts it.

The authority is made at every start and its key is kept in memory only (the leaf's key
is written to a 0600 file for the moment OpenSSL loads it, then removed). It may sign for
Google's API hosts only: its name constraints permit ``googleapis.com`` and nothing else,
so even a copy of its certificate in a bundle vouches for no other site. The leaf is
``*.googleapis.com`` and ``googleapis.com`` (a wildcard covers one label:
``us-central1-aiplatform``, ``storage``, ``oauth2``, ``logging``, ``www``).
"""

from __future__ import annotations

import datetime
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

GOOGLE_APIS = "googleapis.com"
LIFETIME = datetime.timedelta(days=30)


@dataclass(frozen=True)
class Certificates:
    """The authority's certificate (PEM) and a server context presenting the leaf."""

    authority_pem: bytes
    context: ssl.SSLContext


def _name(common: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "trainpool emulator"),
            x509.NameAttribute(NameOID.COMMON_NAME, common),
        ]
    )


def make(label: str) -> Certificates:
    """A fresh authority (named with ``label``, the emulator's root) and its leaf."""
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"trainpool emulator CA {label}"[:64])
    ca = _authority(ca_key, ca_name, now)
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = _leaf(leaf_key, ca_key, ca_name, now)
    pem = serialization.Encoding.PEM
    chain = leaf.public_bytes(pem) + ca.public_bytes(pem)
    key = leaf_key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return Certificates(ca.public_bytes(pem), _server_context(chain, key))


def _authority(
    ca_key: ec.EllipticCurvePrivateKey, ca_name: x509.Name, now: datetime.datetime
) -> x509.Certificate:
    """The authority's self-signed certificate: a CA with no intermediate below it, valid
    only for names under :data:`GOOGLE_APIS`."""
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.NameConstraints(
                permitted_subtrees=[x509.DNSName(GOOGLE_APIS)], excluded_subtrees=None
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ca


def _leaf(
    leaf_key: ec.EllipticCurvePrivateKey,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_name: x509.Name,
    now: datetime.datetime,
) -> x509.Certificate:
    """The proxy's certificate for ``*.googleapis.com``, signed by the authority."""
    leaf = (
        x509.CertificateBuilder()
        .subject_name(_name(f"*.{GOOGLE_APIS}"))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + LIFETIME)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(f"*.{GOOGLE_APIS}"), x509.DNSName(GOOGLE_APIS)]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return leaf


def _server_context(chain: bytes, key: bytes) -> ssl.SSLContext:
    """A TLS server context of the leaf's ``chain`` and ``key``; the key is written only to
    a private temporary folder for ``load_cert_chain``, and removed with it."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory() as private:
        os.chmod(private, 0o700)
        cert_file, key_file = Path(private) / "leaf.pem", Path(private) / "leaf.key"
        cert_file.write_bytes(chain)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
        context.load_cert_chain(cert_file, key_file)
    context.set_alpn_protocols(["http/1.1", "h2"])
    return context


LOCAL_ROOTS_ENV = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT")
"""Where the emulator's own environment may name the roots this machine trusts: how people
behind a TLS-intercepting proxy make Python, requests, curl and pip trust its authority."""


def local_roots(exclude: Path) -> list[Path]:
    """The CA files this machine trusts besides certifi's: OpenSSL's default file and those
    the emulator's environment names (:data:`LOCAL_ROOTS_ENV`), each once; never ``exclude``
    (a bundle of an earlier start, when the emulator itself runs under ``trainpool exec``)."""
    defaults = ssl.get_default_verify_paths()
    named = [defaults.cafile, defaults.openssl_cafile, *map(os.environ.get, LOCAL_ROOTS_ENV)]
    found: list[Path] = []
    for name in named:
        if not name or not Path(name).is_file():
            continue
        path = Path(name).resolve()
        if path != exclude.resolve() and path not in found:
            found.append(path)
    return found


def write_bundle(path: Path, authority_pem: bytes) -> Path:
    """The public roots (certifi's), the roots this machine trusts (:func:`local_roots`: a
    replica's ``pip install`` reaches the package index through the proxy's tunnel, past any
    TLS-intercepting proxy of the network, as on the machine itself) and the authority, in one
    PEM file at ``path``."""
    import certifi

    parts = [Path(certifi.where()).read_bytes()]
    parts += [root.read_bytes() for root in local_roots(path)]
    staged = path.with_name(f".{path.name}.{os.getpid()}")
    staged.write_bytes(b"\n".join(part.rstrip(b"\n") for part in parts) + b"\n" + authority_pem)
    os.replace(staged, path)
    return path
