"""Rewrite the component signatures in docs/contributing/internals.md from components/.

Run ``python3 scripts/signatures.py`` after a change to a component's signature;
tests/test_compiling.py fails while the page and the code disagree.
"""

from __future__ import annotations

from pathlib import Path

from trainpool.compiling import component_signatures, with_signatures

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    page = ROOT / "docs" / "contributing" / "internals.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(with_signatures(text, component_signatures(ROOT / "components")), "utf-8")
    print(f"{page}: {len(component_signatures(ROOT / 'components'))} component signatures")
