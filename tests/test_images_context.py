"""Context digest: stable across order, timestamps, permissions and machines; moved by content.

Also: the default .dockerignore keeps VCS data, virtualenvs, caches and secrets out.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from trainpool.images import ignore
from trainpool.images.context import BuildContext, collect

FILES = {
    "trainer/__init__.py": b"",
    "trainer/task.py": b"print('train')\n",
    "requirements.txt": b"torch\n",
    "data/small.csv": b"a,b\n1,2\n",
}
SECRETS = {
    ".git/config": b"[core]\n",
    ".venv/bin/python": b"",
    "myenv/pyvenv.cfg": b"home = /usr\n",
    "myenv/lib/site.py": b"",
    "trainer/__pycache__/task.cpython-311.pyc": b"\0",
    ".pytest_cache/v": b"",
    ".env": b"TOKEN=1\n",
    "config/.env.prod": b"TOKEN=2\n",
    "keys/server.pem": b"-----BEGIN",
    "keys/server.key": b"k",
    "sa/service-account-prod.json": b"{}",
    "sa/gcp-credentials.json": b"{}",
    "credentials.json": b"{}",
    ".ssh/id_rsa": b"k",
    "id_ed25519.pub": b"k",
    ".config/gcloud/application_default_credentials.json": b"{}",
    ".netrc": b"machine x",
    "oauth/client_secret_123.apps.googleusercontent.com.json": b"{}",
    ".git-credentials": b"https://u:p@example",
    "home/.boto": b"[Credentials]",
    ".trainpool/emulator.sqlite": b"",
}


def write(root: Path, files: dict[str, bytes], order: list[str] | None = None) -> Path:
    for rel in order or list(files):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[rel])
    return root


def digest(root: Path, **args: str) -> str:
    return BuildContext.of(collect(root), args).digest


def test_digest_ignores_order_mtimes_and_permission_bits(tmp_path: Path) -> None:
    one = write(tmp_path / "one", FILES)
    two = write(tmp_path / "two", FILES, order=sorted(FILES, reverse=True))
    for i, path in enumerate(sorted(two.rglob("*"))):
        if path.is_file():
            os.utime(path, (1_000_000 + i, 2_000_000 + i))
            path.chmod(0o600 if i % 2 else 0o664)
    assert digest(one) == digest(two)


def test_digest_is_the_same_on_any_machine(tmp_path: Path) -> None:
    # Golden: the digest of FILES is part of the format; a change here re-tags every image.
    golden = "19b3fa1d8485c55089b4ca5005eb0358c0f0399de91ac15df053fc8753bfb3df"
    assert digest(write(tmp_path / "a", FILES)) == golden
    assert digest(write(tmp_path / "elsewhere" / "deep", FILES)) == golden


@pytest.mark.parametrize(
    "change",
    ["edit", "add", "remove", "rename", "exec_bit", "build_arg"],
)
def test_any_content_change_changes_the_digest(tmp_path: Path, change: str) -> None:
    root = write(tmp_path, FILES)
    before = digest(root)
    args = {}
    if change == "edit":
        (root / "trainer/task.py").write_bytes(b"print('train!')\n")
    elif change == "add":
        (root / "trainer/extra.py").write_bytes(b"")
    elif change == "remove":
        (root / "data/small.csv").unlink()
    elif change == "rename":
        (root / "data/small.csv").rename(root / "data/smaller.csv")
    elif change == "exec_bit":
        (root / "trainer/task.py").chmod(0o755)
    else:
        args = {"EPOCHS": "3"}
    assert digest(root, **args) != before


def test_default_dockerignore_keeps_secrets_and_clutter_out(tmp_path: Path) -> None:
    root = write(tmp_path, {**FILES, **SECRETS})
    context = BuildContext.of(collect(root))
    assert context.paths() == sorted(FILES)
    assert context.digest == digest(write(tmp_path / "clean", FILES))
    buffer = io.BytesIO()
    context.write_tarball(buffer)
    with tarfile.open(fileobj=io.BytesIO(buffer.getvalue()), mode="r:gz") as tar:
        assert sorted(tar.getnames()) == sorted(FILES)


def test_own_dockerignore_replaces_the_default_but_never_the_secret_names(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            **FILES,
            ".dockerignore": b"data\n!data/small.csv\n*.txt\n!key.json\n",
            ".env": b"x",
            "__pycache__/x.pyc": b"\0",
            "key.json": b"{}",
            "deploy/sa.json": b"{}",
        },
    )
    assert BuildContext.of(collect(root)).paths() == [
        ".dockerignore",
        "__pycache__/x.pyc",
        "data/small.csv",
        "trainer/__init__.py",
        "trainer/task.py",
    ]


def test_tarball_is_byte_identical_across_copies(tmp_path: Path) -> None:
    one = write(tmp_path / "one", FILES)
    two = write(tmp_path / "two", FILES, order=sorted(FILES, reverse=True))
    for path in two.rglob("*"):
        if path.is_file():
            os.utime(path, (5, 5))
    blobs = []
    for root in (one, two):
        buffer = io.BytesIO()
        BuildContext.of(collect(root)).write_tarball(buffer)
        blobs.append(buffer.getvalue())
    assert blobs[0] == blobs[1]
    with tarfile.open(fileobj=io.BytesIO(blobs[0]), mode="r:gz") as tar:
        member = tar.getmember("trainer/task.py")
        assert (member.mtime, member.uid, member.mode) == (0, 0, 0o644)


def test_stage_and_recollect_keep_the_digest(tmp_path: Path) -> None:
    root = write(tmp_path / "src", FILES)
    (root / "trainer/task.py").chmod(0o755)
    (root / "link.txt").symlink_to("requirements.txt")
    context = BuildContext.of(collect(root))
    context.stage(tmp_path / "staged")
    assert BuildContext.of(collect(tmp_path / "staged", patterns=[])).digest == context.digest


@pytest.mark.parametrize(
    ("pattern", "path", "excluded"),
    [
        ("*.log", "x.log", True),
        ("*.log", "a/x.log", False),
        ("**/*.log", "a/b/x.log", True),
        ("/build", "build/out.o", True),
        ("doc?", "docs/x", True),
        ("[ab].txt", "b.txt", True),
        ("[ab].txt", "c.txt", False),
    ],
)
def test_dockerignore_patterns_follow_docker(pattern: str, path: str, excluded: bool) -> None:
    assert ignore.ignored(path, ignore.parse(pattern)) is excluded


def test_unclosed_bracket_is_refused_with_the_pattern() -> None:
    with pytest.raises(ValueError, match=r"\.dockerignore pattern '\[ab': '\[' without a closing"):
        ignore.parse("[ab")


def test_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="source_dir .*: not a folder"):
        collect(tmp_path / "nope")


def test_dockerfile_and_dockerignore_are_sent_even_when_ignored(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "Dockerfile": b"FROM python:3.11-slim\nCOPY app.py .\n",
            ".dockerignore": b"*\n!app.py\n",
            "app.py": b"print(1)\n",
            "notes.txt": b"left out",
        },
    )
    assert BuildContext.of(collect(root)).paths() == [".dockerignore", "Dockerfile", "app.py"]


def _pkcs12() -> bytes:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "t")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return pkcs12.serialize_key_and_certificates(
        b"t", key, cert, None, serialization.BestAvailableEncryption(b"pw")
    )


SA_KEY = b'{"type": "service_account", "project_id": "p", "private_key": "-----BEGIN..."}'
USER_CRED = b'{"type": "authorized_user", "client_id": "c", "refresh_token": "r"}'
PEM = b"notes\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn...\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("trainer/model.json", SA_KEY, "a service-account key"),
        ("adc.json", USER_CRED, "a user credential"),
        ("trainer/notes.txt", PEM, "a PEM private key"),
        ("bundle.bin", None, "a PKCS#12 key bundle"),
    ],
)
def test_a_credential_under_any_name_is_refused_naming_the_file(
    tmp_path: Path, name: str, content: bytes | None, kind: str
) -> None:
    root = write(tmp_path, {**FILES, name: content if content is not None else _pkcs12()})
    with pytest.raises(ValueError, match=f"source_dir: {name} holds {kind}"):
        collect(root)


def test_ordinary_json_and_certificates_are_kept(tmp_path: Path) -> None:
    files = {
        "config.json": b'{"type": "model", "layers": 3}',
        "ca.crt": b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        # code that names the header (a detector, a test) is not a key
        "check.py": b'MARKER = (b"-----BEGIN ", b"PRIVATE KEY-----")\n',
    }
    root = write(tmp_path, {**FILES, **files})
    assert set(files) <= set(BuildContext.of(collect(root)).paths())
