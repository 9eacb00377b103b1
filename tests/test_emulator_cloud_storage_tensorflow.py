"""TensorFlow's own Cloud Storage file system writing to ``gs://`` through the storage door,
unchanged, under ``trainpool exec``'s environment: it speaks to ``www.googleapis.com`` through
the emulator's HTTPS proxy (``HTTPS_PROXY``, the store's CA in ``CURL_CA_BUNDLE``) with the
refresh token ``trainpool exec`` gives it in Application Default Credentials.

It writes, reads and lists files, saves a ``tf.Module`` (folder markers, a checkpoint whose
shards it renames with ``rewriteTo``, resumable uploads) and a Keras model, and removes a tree.
Its empty PUTs and POSTs carry ``Transfer-Encoding: identity``, which the door once refused
(issue 44); its media PUTs are chunked and carry a ``Content-Length`` too.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.shell import ok, run

import trainpool.emulator as emulator
from trainpool.emulator.cloud_storage import bodies

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
TF_PYTHON = Path(__file__).resolve().parents[1] / ".venv-tf" / "bin" / "python"
SCRIPT = """
import sys
import keras
import tensorflow as tf

base = sys.argv[1]
with tf.io.gfile.GFile(f"{base}/notes/hello.txt", "w") as f:
    f.write("hello from tensorflow\\n")
print("READ", tf.io.gfile.GFile(f"{base}/notes/hello.txt").read().strip())
print("LIST", sorted(tf.io.gfile.listdir(f"{base}/notes")))


class Scale(tf.Module):
    def __init__(self):
        self.w = tf.Variable(3.0)

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def __call__(self, x):
        return self.w * x


tf.saved_model.save(Scale(), f"{base}/module")
print("CALL", float(tf.saved_model.load(f"{base}/module")(tf.constant(2.0))))
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
model.save(f"{base}/keras/model.keras")
back = keras.models.load_model(f"{base}/keras/model.keras")
print("KERAS", [tuple(w.shape) for w in back.get_weights()])
tf.io.gfile.rmtree(f"{base}/module")
print("LEFT", sorted(tf.io.gfile.listdir(base)))
"""


def tf_python() -> Path:
    """The TensorFlow virtualenv's interpreter (``bash scripts/setup`` makes it)."""
    if TF_PYTHON.exists():
        done = subprocess.run([str(TF_PYTHON), "-c", "import tensorflow"], capture_output=True)
        if done.returncode == 0:
            return TF_PYTHON
    pytest.skip(f"no TensorFlow virtualenv at {TF_PYTHON}: run `bash scripts/setup`")


@pytest.fixture
def emu(tmp_path: Path) -> Iterator[emulator.Emulator]:
    with emulator.start(tmp_path / "root") as running:
        (running.root / "gcs" / "tf-bucket").mkdir(parents=True)
        yield running


def test_tensorflow_writes_saves_and_reads_back_through_the_door(
    emu: emulator.Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = tf_python()
    framings: Counter[tuple[str, bool]] = Counter()
    read_body = bodies.Body.__init__

    def seen(self: bodies.Body, rfile: Any, headers: Any, limit: int) -> None:
        coding = (headers.get("Transfer-Encoding") or "").lower()
        framings[coding, headers.get("Content-Length") is not None] += 1
        read_body(self, rfile, headers, limit)

    monkeypatch.setattr(bodies.Body, "__init__", seen)
    (tmp_path / "job.py").write_text(SCRIPT)
    out = ok(
        run(
            emu,
            [str(python), str(tmp_path / "job.py"), "gs://tf-bucket/run"],
            timeout=100,
            env={"TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"},
        )
    )
    lines = dict(line.split(" ", 1) for line in out.splitlines() if line[:1].isupper())
    assert lines["READ"] == "hello from tensorflow"
    assert lines["LIST"] == "['hello.txt']"
    assert lines["CALL"] == "6.0"
    assert lines["KERAS"] == "[(3, 2), (2,)]"
    assert lines["LEFT"] == "['keras/', 'notes/']"
    stored = emu.root / "gcs" / "tf-bucket" / "run"
    assert (stored / "notes" / "hello.txt").read_text() == "hello from tensorflow\n"
    assert (stored / "keras" / "model.keras").stat().st_size > 0
    assert not [p for p in (stored / "module").rglob("*") if not p.is_dir()], "rmtree: no file"
    assert framings["identity", True] > 0, f"TensorFlow sent no identity framing: {framings}"
    assert not list((emu.root / "storage-uploads").iterdir())
