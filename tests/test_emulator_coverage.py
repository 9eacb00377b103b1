"""The coverage page is what the emulator serves, and every gcloud command it says the tests
run is run by the test it names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trainpool.emulator import coverage

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parent.parent


def test_the_checked_in_page_is_what_the_emulator_serves() -> None:
    assert coverage.PAGE.read_text(encoding="utf-8") == coverage.render(), (
        "docs/emulator-coverage.md is stale: run python3 -m trainpool.emulator.coverage"
    )


def test_the_page_says_what_is_served_and_what_is_not() -> None:
    page = coverage.PAGE.read_text(encoding="utf-8")
    assert (
        "| CreateCustomJob | `POST /v1/{parent=projects/*/locations/*}/customJobs` | served |"
        in page
    )
    assert re.search(r"\| CreateBatchPredictionJob \| [^|]+ \| not emulated \|", page)
    assert "| TailLogEntries | `POST /v2/entries:tail` | served |" in page
    assert "| `google.cloud.aiplatform.v1.EndpointService` |" in page, "a service not served"
    assert "### `google.cloud.aiplatform.v1.MetadataService`: 32 of 32 methods served" in page
    assert "| ReadTensorboardBlobData |" in page and "28 of 30 methods served" in page


@pytest.mark.parametrize(("command", "what", "test"), coverage.GCLOUD_COMMANDS)
def test_each_listed_command_is_typed_by_its_test(command: str, what: str, test: str) -> None:
    source = (ROOT / test).read_text(encoding="utf-8")
    tool, _, rest = command.partition(" ")
    words = re.split(r" --| \(|=", rest)[0].replace("/", " ").split()
    for word in [w for w in words if w.islower() and not w.isupper() and w not in ("...",)]:
        assert f'"{word}"' in source or f"{tool} {word}" in source or f" {word} " in source, (
            f"{test} does not type {word!r} of {command!r}"
        )
