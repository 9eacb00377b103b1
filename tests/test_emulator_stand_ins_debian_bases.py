"""The CA bundle the offline stand-in bases trust (``stand_ins/debian_bases.py``): the setting
``TRAINPOOL_CA_BUNDLE`` (a PEM file, ``off``), this machine's bundle by default, and the
hash a stand-in is labelled with. Making a stand-in is tested on a real engine in
``tests/test_emulator_jobs_containers.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainpool.emulator.stand_ins import debian_bases

PEM = (
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ0FUUkFJTlBPT0w=\nAQID\n"
    "-----END CERTIFICATE-----\n"
)
OTHER = PEM.replace("AQID", "BAUG")


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_the_setting_names_a_bundle_off_names_none(tmp_path: Path) -> None:
    bundle = write(tmp_path / "proxy.pem", "# the proxy's CA\n" + PEM + "junk\n" + OTHER)
    found = debian_bases.ca_bundle({"TRAINPOOL_CA_BUNDLE": str(bundle), "SSL_CERT_FILE": "/x"})
    assert found is not None and found.source == "TRAINPOOL_CA_BUNDLE"
    assert found.certificates == (PEM.strip(), OTHER.strip())  # the certificates only
    for off in ("off", "OFF", "0", "none"):
        assert debian_bases.ca_bundle({"TRAINPOOL_CA_BUNDLE": off}) is None


def test_a_bundle_the_setting_names_that_is_missing_or_empty_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as missing:
        debian_bases.ca_bundle({"TRAINPOOL_CA_BUNDLE": str(tmp_path / "nope.pem")})
    assert str(missing.value).startswith(
        f"TRAINPOOL_CA_BUNDLE={tmp_path / 'nope.pem'}: cannot read"
    )
    assert "accepted: a readable PEM file of CA certificates, or TRAINPOOL_CA_BUNDLE=off" in str(
        missing.value
    )
    empty = write(tmp_path / "empty.pem", "no certificate here\n")
    with pytest.raises(ValueError, match="holds no PEM certificate"):
        debian_bases.ca_bundle({"TRAINPOOL_CA_BUNDLE": str(empty)})


def test_by_default_the_bundle_the_machines_variables_name(tmp_path: Path) -> None:
    pip = write(tmp_path / "pip.pem", PEM)
    found = debian_bases.ca_bundle({"SSL_CERT_FILE": str(tmp_path / "gone"), "PIP_CERT": str(pip)})
    assert found is not None and (found.path, found.source) == (pip, "PIP_CERT")


def test_the_label_is_the_certificates_hash_not_the_files(tmp_path: Path) -> None:
    one = debian_bases.ca_bundle({"TRAINPOOL_CA_BUNDLE": str(write(tmp_path / "a", PEM))})
    same = debian_bases.ca_bundle(
        {"TRAINPOOL_CA_BUNDLE": str(write(tmp_path / "b", "# a comment\r\n" + PEM))}
    )
    other = debian_bases.ca_bundle({"TRAINPOOL_CA_BUNDLE": str(write(tmp_path / "c", OTHER))})
    assert one is not None and same is not None and other is not None
    assert one.label == same.label != other.label
    assert one.label.startswith("sha256:") and len(one.label) == 7 + 64


class Image:
    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels


def test_a_stand_in_made_before_bundles_or_with_another_is_not_current(tmp_path: Path) -> None:
    bundle = debian_bases.ca_bundle({"TRAINPOOL_CA_BUNDLE": str(write(tmp_path / "a", PEM))})
    assert bundle is not None
    assert debian_bases.current(Image({debian_bases.CA_LABEL: bundle.label}), bundle)
    assert not debian_bases.current(Image({}), bundle)  # made before the setting existed
    assert not debian_bases.current(Image({debian_bases.CA_LABEL: "sha256:0"}), bundle)
    assert not debian_bases.current(Image({debian_bases.CA_LABEL: bundle.label}), None)
    assert debian_bases.current(Image({debian_bases.CA_LABEL: "none"}), None)


def test_a_stores_own_bundle_is_not_the_machines(tmp_path: Path) -> None:
    # under `trainpool exec`, SSL_CERT_FILE names the store's bundle (the emulator's authority
    # with the machine's roots): a stand-in made there would differ per store
    store = tmp_path / "root"
    store.mkdir()
    write(store / "emulator.sqlite", "")
    own = write(store / "ca-bundle.pem", PEM)
    machine = write(tmp_path / "machine.pem", OTHER)
    found = debian_bases.ca_bundle({"SSL_CERT_FILE": str(own), "PIP_CERT": str(machine)})
    assert found is not None and found.path == machine
