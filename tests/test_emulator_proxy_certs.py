"""The CA bundle replicas and `trainpool exec` commands get (trainpool.emulator.proxy.certs):
the public roots, the roots this machine trusts, and the proxy's authority, whose name
constraints let it vouch for Google's API hosts only."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from trainpool.emulator.proxy import certs


def self_signed(common: str) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


def test_the_bundle_trusts_the_networks_own_authority_and_the_proxys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind a TLS-intercepting proxy the machine trusts its authority through
    REQUESTS_CA_BUNDLE or SSL_CERT_FILE; a replica's pip reaches the package index through the
    emulator's proxy, so the bundle it is given must hold that authority too."""
    corporate = tmp_path / "corporate.pem"
    corporate.write_bytes(self_signed("corporate interception CA"))
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(corporate))
    bundle = tmp_path / "store" / "ca.pem"
    bundle.parent.mkdir()
    made = certs.make(str(tmp_path))
    certs.write_bundle(bundle, made.authority_pem)
    text = bundle.read_bytes()
    assert corporate.read_bytes().strip() in text
    assert made.authority_pem.strip() in text
    assert text.count(b"-----BEGIN CERTIFICATE-----") > 100  # certifi's public roots too
    # an earlier start's bundle named by the emulator's own environment is not read back
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    assert bundle.resolve() not in certs.local_roots(bundle)
