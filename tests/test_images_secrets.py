"""Credentials found wherever they are in a file of a build context (issue 22, item 6).

Each variant below reached the local image store before: a service-account JSON inside a
list, after a byte-order mark, after 1 MB of other content, inside a notebook; a PEM key
indented in YAML, after 1 MB, written as an escaped string. Each is now refused naming the
file; ordinary files that only mention a header or an account type are kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from trainpool.images.context import collect
from trainpool.images.secrets import CHUNK, CredentialInContext, Scanner, credential_kind


@pytest.fixture(scope="module")
def pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def service_account(pem: str) -> dict[str, str]:
    return {
        "type": "service_account",
        "project_id": "p",
        "private_key_id": "0" * 40,
        "private_key": pem,
        "client_email": "sa@p.iam.gserviceaccount.com",
    }


def notebook(*cells: str) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "source": cell.splitlines(keepends=True)} for cell in cells
            ],
            "nbformat": 4,
        },
        indent=1,
    )


PADDING = "x = 1  # padding\n" * (CHUNK // 16 + 1)
SA = "a service-account key"
PEM = "a PEM private key"


def variants(pem: str) -> dict[str, tuple[bytes, str]]:
    sa = service_account(pem)
    user = {"type": "authorized_user", "client_id": "c", "refresh_token": "1//r"}
    indented = "\n".join("      " + line for line in pem.splitlines())
    return {
        "service account JSON inside a list": (json.dumps([{"x": 1}, sa]).encode(), SA),
        "service account JSON after a byte-order mark": (
            b"\xef\xbb\xbf" + json.dumps(sa).encode(),
            SA,
        ),
        "service account JSON after 1 MB": ((PADDING + json.dumps(sa)).encode(), SA),
        "service account JSON in a notebook cell": (
            notebook("import json\n", "KEY = " + json.dumps(sa, indent=2)).encode(),
            SA,
        ),
        "service account JSON without its PEM": (
            json.dumps({**sa, "private_key": "x"}).encode(),
            SA,
        ),
        "user credential nested in a config": (
            json.dumps({"auth": {"adc": user}}).encode(),
            "a user credential",
        ),
        "PEM indented in YAML": (f"tls:\n  key: |\n{indented}\n".encode(), PEM),
        "PEM after 1 MB": ((PADDING + pem).encode(), PEM),
        "PEM as an escaped string": (f"KEY = {json.dumps(pem)}\n".encode(), PEM),
        "PEM escaped twice (JSON in a notebook's string)": (
            notebook("KEY = " + json.dumps(json.dumps(pem))).encode(),
            PEM,
        ),
        "PEM split across a notebook's lines": (notebook("KEY = '''" + pem + "'''").encode(), PEM),
        "PEM across the chunk boundary": (("y" * (CHUNK - 200) + pem).encode(), PEM),
        "PEM with Windows line ends": (pem.replace("\n", "\r\n").encode(), PEM),
    }


def test_every_variant_is_found(pem: str, tmp_path: Path) -> None:
    for name, (content, kind) in variants(pem).items():
        path = tmp_path / "file.bin"
        path.write_bytes(content)
        found = credential_kind(path)
        assert found is not None and found.startswith(kind), (name, found)


def test_a_variant_in_a_context_is_refused_naming_the_file(pem: str, tmp_path: Path) -> None:
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "task.py").write_text("print(1)\n")
    (tmp_path / "trainer" / "explore.ipynb").write_text(notebook(json.dumps(service_account(pem))))
    with pytest.raises(CredentialInContext, match="source_dir: trainer/explore.ipynb holds a"):
        collect(tmp_path)


def test_any_chunking_finds_the_same(pem: str) -> None:
    data = (PADDING[:5000] + json.dumps(pem) + PADDING[:5000]).encode()
    for size in (1, 7, 512, 4096, len(data)):
        scanner = Scanner()
        for start in range(0, len(data), size):
            scanner.feed(data[start : start + size])
        assert scanner.kind == PEM, size


@pytest.mark.parametrize(
    "content",
    [
        b'MARKER = (b"-----BEGIN ", b"PRIVATE KEY-----")\n',
        b"docs: a key starts -----BEGIN PRIVATE KEY----- and ends "
        b"-----END PRIVATE KEY----- (see RFC 7468)!\n",
        b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n",
        b'{"type": "service_account", "email": "sa@p.iam.gserviceaccount.com"}',
        b'{"type": "authorized_user"}',
        b"account_type = 'service_account'; private_key = load()\n",
        b"\x00\x01" * 100_000,
    ],
)
def test_mentions_are_not_credentials(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(content)
    assert credential_kind(path) is None
