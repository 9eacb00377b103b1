"""Which base a build on the engine uses (``builds/engine_builds.py``): a ``python:3.11-slim``
that an earlier build tagged on a stand-in is made again when it does not trust today's CA
bundle (``TRAINPOOL_CA_BUNDLE``); a real one (pulled, loaded) is never replaced. The engine
here is a stand-in of docker-py's client: the real builds are in
``tests/test_emulator_jobs_containers.py``."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from trainpool.emulator.builds import engine_builds
from trainpool.emulator.stand_ins import debian_bases

PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
BASE = "python:3.11-slim"


class Image:
    def __init__(self, labels: dict[str, str]) -> None:
        self.labels = labels
        self.tags: list[str] = []

    def tag(self, repository: str, tag: str) -> None:
        self.tags.append(f"{repository}:{tag}")


class Images:
    def __init__(self, images: dict[str, Image]) -> None:
        self.images = images
        self.removed: list[str] = []

    def get(self, name: str) -> Image:
        from docker import errors

        if name not in self.images:
            raise errors.ImageNotFound(name)
        return self.images[name]

    def remove(self, name: str) -> None:
        self.removed.append(name)
        del self.images[name]


class Engine:
    describe = "a fake engine"

    def __init__(self, images: dict[str, Image]) -> None:
        self.client = type("Client", (), {})()
        self.client.images = Images(images)

    def image(self, name: str) -> Any:
        return self.client.images.images.get(name)


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> debian_bases.CaBundle:
    (tmp_path / "proxy.pem").write_text(PEM)
    monkeypatch.setenv(debian_bases.CA_BUNDLE_ENV, str(tmp_path / "proxy.pem"))
    found = debian_bases.ca_bundle()
    assert found is not None
    return found


def stand_in(ca: str | None) -> Image:
    labels = {debian_bases.LABEL: BASE, debian_bases.DIFFERENCE_LABEL: "it differs"}
    if ca is not None:
        labels[debian_bases.CA_LABEL] = ca
    return Image(labels)


def remade(monkeypatch: pytest.MonkeyPatch) -> Image:
    made = stand_in("new")
    monkeypatch.setattr(debian_bases, "ensure", lambda client, name: made)
    return made


def test_a_stand_in_tagged_before_stand_ins_carried_a_bundle_is_made_again(
    bundle: debian_bases.CaBundle, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Engine({BASE: stand_in(None)})
    made = remade(monkeypatch)
    log = io.StringIO()
    engine_builds.ensure_base(engine, BASE, log)  # type: ignore[arg-type]
    assert engine.client.images.removed == [BASE]  # the old tag only
    assert made.tags == [BASE]
    assert log.getvalue().startswith(
        f"FROM {BASE}: the stand-in tagged so was made before stand-ins carried a CA bundle; "
        f"the stand-in made offline from Debian's packages is tagged {BASE} "
    )


def test_one_with_another_bundle_is_made_again_one_with_this_one_is_kept(
    bundle: debian_bases.CaBundle, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Engine({BASE: stand_in("sha256:other")})
    remade(monkeypatch)
    log = io.StringIO()
    engine_builds.ensure_base(engine, BASE, log)  # type: ignore[arg-type]
    assert "trusts another CA bundle (sha256:other)" in log.getvalue()
    current = Engine({BASE: stand_in(bundle.label)})
    engine_builds.ensure_base(current, BASE, io.StringIO())  # type: ignore[arg-type]
    assert current.client.images.removed == []


def test_a_real_base_is_never_replaced(
    bundle: debian_bases.CaBundle, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Engine({BASE: Image({})})  # pulled or loaded: no stand-in label
    remade(monkeypatch)
    log = io.StringIO()
    engine_builds.ensure_base(engine, BASE, log)  # type: ignore[arg-type]
    assert engine.client.images.removed == [] and log.getvalue() == ""
