"""The emulator's own log of a job (``<job dir>/job.log``): warnings and decisions."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path


class JobLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def __call__(self, message: str) -> None:
        stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {message}\n")
