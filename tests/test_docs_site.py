"""The docs site builds strictly (no broken link or anchor, no missing or unlisted page), and
the README stays a short front page that starts with the two commands tooling runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAIN_JOB = (
    "python3 -m pip install torch==2.13.0"
    " && python3 -m pip install -c constraints.txt -e '.[local]'"
    " && trainpool run pipelines/distributed_training.yaml --local"
    " --param source_dir=examples/pytorch_ddp"
)
FIRST_LINES = (
    "# trainpool\n"
    "\n"
    "```bash\n"
    "# install and run the main job: the sample distributed-training pipeline, locally, on the"
    " emulator\n"
    f"{MAIN_JOB}\n"
    "# install and run the tests\n"
    "bash scripts/test\n"
    "```\n"
)
MAX_README_LINES = 200


@pytest.mark.timeout(120)
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "index.html").is_file()
    assert not (ROOT / "site").exists(), "a docs build wrote site/ into the tree"


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.startswith(FIRST_LINES), "README.md must start with the two commands, as is"
    assert len(text.splitlines()) <= MAX_README_LINES


def test_the_readmes_links_into_the_docs_exist() -> None:
    """The README is outside the site, so mkdocs does not check its links: this does, pages
    and their anchors (slugged as the site's table of contents slugs its headings)."""
    from markdown.extensions.toc import slugify

    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#([^)\s]*))?\)", README.read_text(encoding="utf-8"))
    assert links
    broken = []
    for page, anchor in links:
        if not (ROOT / page).is_file():
            broken.append(page)
        elif anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / page).read_text(encoding="utf-8"), re.M)
            if anchor not in {slugify(h, "-") for h in headings}:
                broken.append(f"{page}#{anchor}")
    assert broken == []
