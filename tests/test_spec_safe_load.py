"""spec.safe_load: the one bounded reader of users' YAML and JSON."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from trainpool.spec import safe_load
from trainpool.spec.safe_load import UnsafeDocument, load_json, load_yaml, load_yaml_file


def test_json_types_only_and_dates_stay_text() -> None:
    assert load_yaml("a: [1, 2.5, true, null, x]\nd: 2024-01-01\n", "f") == {
        "a": [1, 2.5, True, None, "x"],
        "d": "2024-01-01",
    }
    with pytest.raises(UnsafeDocument, match=r"f: tag !!set is not accepted"):
        load_yaml("s: !!set {a, b}\n", "f")


def test_aliases_are_read_once_and_bounded() -> None:
    assert load_yaml("a: &x [1, 2]\nb: *x\n", "f") == {"a": [1, 2], "b": [1, 2]}
    with pytest.raises(UnsafeDocument, match="refers to a node that contains it"):
        load_yaml("a: &x [*x]\n", "f")
    levels = ["l0: &l0 [" + ", ".join(["x" * 10] * 10) + "]"]
    levels += [f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]" for n in range(1, 9)]
    with pytest.raises(UnsafeDocument, match="expands through its aliases"):
        load_yaml("\n".join(levels), "f")


def test_one_document_unless_the_first_is_asked_for() -> None:
    with pytest.raises(UnsafeDocument, match="one YAML or JSON document"):
        load_yaml("a: 1\n---\nb: 2\n", "f")
    assert load_yaml("a: 1\n---\nb: 2\n", "f", first=True) == {"a": 1}


def test_encodings(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_bytes(codecs.BOM_UTF8 + b"a: 1\n")
    assert load_yaml_file(path, "f") == {"a": 1}
    path.write_bytes("a: 1\n".encode("utf-16"))
    with pytest.raises(UnsafeDocument, match="f: is UTF-16 text; accepted: UTF-8"):
        load_yaml_file(path, "f")
    path.write_bytes(b"a: \xff\n")
    with pytest.raises(UnsafeDocument, match=r"byte 3 \(b'\\xff'\) is not UTF-8"):
        load_yaml_file(path, "f")


def test_size_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safe_load, "MAX_BYTES", 10)
    path = tmp_path / "r.yaml"
    path.write_text("a: 12345678901\n")
    with pytest.raises(UnsafeDocument, match="has 15 bytes; accepted: at most 10 bytes"):
        load_yaml_file(path, "f")


def test_json_depth_and_constants() -> None:
    assert load_json('{"a": "[[[["}', "f") == {"a": "[[[["}
    with pytest.raises(UnsafeDocument, match="nests deeper than 64"):
        load_json("[" * 65 + "]" * 65, "f")
    with pytest.raises(UnsafeDocument, match="Infinity is not a JSON number"):
        load_json("[Infinity]", "f")
    with pytest.raises(UnsafeDocument, match="nests deeper than 64"):
        load_yaml("[" * 65 + "]" * 65, "f")
