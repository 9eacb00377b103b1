"""Docs that cannot drift: every repository path and trainpool name the README and the docs
site mention, in code spans too (where `mkdocs build --strict` cannot see them), exists.

- A path is a code-span token with a ``/`` whose first folder is one of the repository's own
  (``trainpool/``, ``tests/``, ``docs/``, ``benchmarks/``, ...), or one of the packages inside
  ``trainpool/`` or ``trainpool/emulator/`` (the internals map names its files relative to
  those); it must exist under the repository, ``trainpool/`` or ``trainpool/emulator/``.
  Folders of the local store (``gcs/``, ``jobs/<id>/``) are not the repository's and are
  left alone unless their name is a package's.
- A benchmark or test file named alone (``bench_rest.py``, ``test_layers.py``) must exist in
  ``benchmarks/`` or ``tests/``.
- A dotted name ``trainpool.x.y`` (or ``components.x``, ``pipelines.x``, or one relative to
  ``trainpool`` or ``trainpool.emulator``) must import, each part after the module an attribute
  (``trainpool.emulator.v1.*`` are the emulator's own gRPC services, not modules).
Placeholders (``trainpool/x/y.py``, ``<root>``, ``*``) are not names.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
PLACEHOLDERS = ("trainpool/x/y.py", "tests/test_x_y.py")
PROTO_PACKAGES = ("trainpool.emulator.v1",)
TOP = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith((".venv", "."))}
TOP |= {".ci"}
PACKAGES = {
    p.name
    for base in (ROOT / "trainpool", ROOT / "trainpool" / "emulator")
    for p in base.iterdir()
    if (p / "__init__.py").is_file()
}
BASES = (ROOT, ROOT / "trainpool", ROOT / "trainpool" / "emulator")
MODULES = PACKAGES | {
    p.stem for base in BASES[1:] for p in base.glob("*.py") if p.stem != "__init__"
}
"""What a dotted name relative to ``trainpool`` or ``trainpool.emulator`` starts with
(``jobs.replicas.JobReplicas``, ``home.current``), as the internals page writes them."""
FILE_SUFFIXES = {"py", "lock", "log", "sock", "sqlite", "json", "yaml", "md", "txt", "csv"}
"""``clock.py``, ``emulator.sqlite``: file names, not dotted names."""
ALONE = re.compile(r"^(bench_\w+|test_\w+)\.py$")


def tokens(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found = []
    for span in SPAN.findall(text):
        for token in re.split(r"[\s,()]+", span):
            token = token.strip("'\".:;")
            if not token or any(c in token for c in "<>*{}$[]=|@") or "..." in token:
                continue
            if token.startswith(("/", "gs://", "http", "~", "-")) or token in PLACEHOLDERS:
                continue
            found.append(token)
    return found


def missing_path(token: str) -> bool:
    first = token.split("/", 1)[0]
    if first not in TOP and first not in PACKAGES:
        return False  # a folder of the store, a user's, another project's
    return not any((base / token).exists() for base in BASES)


def missing_name(token: str) -> bool:
    if token.startswith(PROTO_PACKAGES):
        return False
    parts = token.split(".")
    for n in range(len(parts), 0, -1):
        rel = Path(*parts[:n])
        if (ROOT / f"{rel}.py").is_file() or (ROOT / rel / "__init__.py").is_file():
            try:
                found: object = importlib.import_module(".".join(parts[:n]))
                for attr in parts[n:]:
                    found = getattr(found, attr)
            except (ImportError, AttributeError):
                return True
            return False
    return True


def problems(pages: list[Path]) -> list[str]:
    found = []
    for page in pages:
        for token in tokens(page):
            if re.fullmatch(r"trainpool(\.\w+)+", token):
                bad = missing_name(token)
            elif re.fullmatch(r"(components|pipelines)(\.\w+)+", token):
                bad = missing_name(token)  # the repository's own packages
            elif (
                re.fullmatch(r"\w+(\.\w+)+", token)
                and token.split(".")[0] in MODULES
                and token.rsplit(".", 1)[1] not in FILE_SUFFIXES
                and not any(part.isupper() for part in token.split("."))
            ):
                bad = missing_name(f"trainpool.{token}") and missing_name(
                    f"trainpool.emulator.{token}"
                )
            elif "/" in token and re.fullmatch(r"[\w.-]+(/[\w.-]+)*/?", token):
                bad = missing_path(token)
            elif ALONE.match(token):
                folder = "benchmarks" if token.startswith("bench_") else "tests"
                bad = not (ROOT / folder / token).is_file()
            else:
                continue
            if bad:
                where = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name
                found.append(f"{where}: {token}")
    return sorted(set(found))


def test_every_path_and_name_the_docs_mention_exists() -> None:
    assert problems(PAGES) == []


def test_a_moved_module_a_renamed_function_and_a_missing_benchmark_are_caught(
    tmp_path: Path,
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "See `trainpool/emulator/jobs/replicas.py` and `jobs/runners.py`, not "
        "`pipelines/jobs.py`; call `trainpool.emulator_client.served_by`, not "
        "`trainpool.home.served_by`; run `bench_rest.py`, not `bench_nothing.py`.\n"
        "```bash\nls pipelines/nothing.py\n```\n"
        "A store folder `gcs/BUCKET/` and a placeholder `trainpool/x/y.py` are not names.\n"
    )
    found = [line.split(": ", 1)[1] for line in problems([page])]
    assert found == ["bench_nothing.py", "pipelines/jobs.py", "trainpool.home.served_by"]


def test_the_contributor_layout_lists_every_folder() -> None:
    """The layout of docs/contributing/index.md names every folder of the repository, of
    ``trainpool/`` and of ``trainpool/emulator/`` (not what installs and runs make)."""
    text = (ROOT / "docs" / "contributing" / "index.md").read_text(encoding="utf-8")
    layout = text.split("## Layout", 1)[1].split("```", 2)[1]
    listed = set(re.findall(r"^\s*([\w.-]+)/\s", layout, flags=re.M))
    made = re.compile(r"^(__pycache__|site|\.(?!ci$).*|.*\.egg-info)$")  # by runs and tools
    folders = {
        p.name
        for base in (ROOT, ROOT / "trainpool", ROOT / "trainpool" / "emulator")
        for p in base.iterdir()
        if p.is_dir() and not made.match(p.name)
    }
    assert folders - listed == set()


def test_every_row_of_the_contributor_map_names_its_tests() -> None:
    text = (ROOT / "docs" / "contributing" / "index.md").read_text(encoding="utf-8")
    table = text.split("## To change X, open Y", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) > 15
    for row in rows[1:]:
        named = re.findall(r"`(tests/test_[\w*]+\.py)`", row)
        assert named, f"names no test: {row[:80]}"
        for pattern in named:
            assert list(ROOT.glob(pattern)), f"{pattern}: no such test ({row[:60]})"


def test_every_row_of_the_emulators_map_names_its_tests() -> None:
    # "to change X, open Y" leads to the tests that hold Y's behaviour (their existence is
    # checked above, as every path of the docs)
    lines = (ROOT / "docs" / "contributing" / "internals.md").read_text().splitlines()
    start = lines.index("### Map: to change X, open Y")
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("| ") and not line.startswith("| to change"):
            rows.append(line)
    assert len(rows) > 50
    untested = [row for row in rows if not re.search(r"`tests/test_\w+\.py`", row.split(" | ")[-1])]
    assert untested == []
