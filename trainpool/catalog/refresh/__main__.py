"""``python3 -m trainpool.catalog.refresh [--check]``: write (or compare) the generated CSVs."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

from trainpool.catalog.refresh.generators import GENERATED, Rows

DATA = Path(__file__).resolve().parents[1] / "data"


def render(rows: Rows) -> str:
    """Rows as CSV text, columns in the order the builder gives them."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    stale = []
    for name, build in GENERATED.items():
        text = render(build())
        path = DATA / name
        if check:
            if not path.is_file() or path.read_text("utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, "utf-8")
            print(f"wrote {path} ({text.count(chr(10)) - 1} rows)")
    if stale:
        print(
            f"stale: {', '.join(stale)}; run: python3 -m trainpool.catalog.refresh", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
