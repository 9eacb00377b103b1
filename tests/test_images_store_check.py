"""A stored local image is used again only while its files are still its context: a changed
or added file makes the next build of that context replace it, and says so."""

from __future__ import annotations

from pathlib import Path

from trainpool.images import builder, image_store
from trainpool.images.image_store_backend import StoreBackend


def trainer(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "train.py").write_text("print('genuine')\n")
    (root / "lib").mkdir()
    (root / "lib" / "util.py").write_text("X = 1\n")
    return root


def build(src: Path, store: Path, notes: list[str]) -> builder.BuildResult:
    request = builder.BuildRequest(source_dir=src, repository="local/demo")
    return builder.build(request, StoreBackend(store), log=notes.append)


def test_an_untouched_image_is_reused_and_pycache_is_not_a_change(tmp_path: Path) -> None:
    src, store = trainer(tmp_path / "src"), tmp_path / "store"
    first = build(src, store, [])
    context_dir = image_store.images_dir(store) / first.digest / "context"
    (context_dir / "lib" / "__pycache__").mkdir()
    (context_dir / "lib" / "__pycache__" / "util.cpython-311.pyc").write_bytes(b"\0")
    assert image_store.check(store, first.digest) is None
    assert build(src, store, []).cached


def test_a_changed_or_added_file_makes_the_next_build_replace_the_image(tmp_path: Path) -> None:
    src, store = trainer(tmp_path / "src"), tmp_path / "store"
    first = build(src, store, [])
    context_dir = image_store.images_dir(store) / first.digest / "context"
    for tamper, says in (
        (
            lambda: (context_dir / "train.py").write_text("print('planted')\n"),
            "train.py was changed",
        ),
        (
            lambda: (context_dir / "sitecustomize.py").write_text("x = 1\n"),
            "sitecustomize.py was added",
        ),
        (lambda: (context_dir / "lib" / "util.py").unlink(), "lib/util.py is missing"),
        (lambda: (context_dir / "train.py").chmod(0o755), "train.py is not the file it was"),
    ):
        tamper()
        assert image_store.check(store, first.digest) == says
        notes: list[str] = []
        again = build(src, store, notes)
        assert not again.cached and again.digest == first.digest
        assert any("was not its context any more" in n and says in n for n in notes), notes
        assert (context_dir / "train.py").read_text() == "print('genuine')\n"
        assert not (context_dir / "sitecustomize.py").exists()
        assert image_store.check(store, first.digest) is None


def test_an_image_without_a_record_is_rebuilt_once(tmp_path: Path) -> None:
    import json

    src, store = trainer(tmp_path / "src"), tmp_path / "store"
    first = build(src, store, [])
    meta_file = image_store.images_dir(store) / first.digest / "image.json"
    meta = json.loads(meta_file.read_text())
    del meta["entries"]
    meta_file.write_text(json.dumps(meta))
    assert "older trainpool" in (image_store.check(store, first.digest) or "")
    assert not build(src, store, []).cached
    assert build(src, store, []).cached
