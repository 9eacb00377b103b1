"""Read what a Dockerfile's last stage sets: ENTRYPOINT, CMD, WORKDIR, ENV, COPY, RUN.

Enough of Docker's rules for the local image store: line continuations,
comments, exec (JSON) and shell forms, ``ENV k=v`` and ``ENV k v``, ``$VAR`` and
``${VAR}`` / ``${VAR:-default}`` from earlier ENV and ARG, relative WORKDIR,
ENTRYPOINT clearing an inherited CMD, and a new stage at each FROM.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

_VAR = re.compile(r"\$(?:\{(\w+)(?::-([^}]*))?\}|(\w+))")


@dataclass
class ImageConfig:
    base: str = ""
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    copies: list[tuple[str, str]] = field(default_factory=list)  # (context path, image path)
    runs: list[str] = field(default_factory=list)


def _instructions(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    if pending.strip():
        word, _, rest = pending.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _expand(text: str, values: Mapping[str, str]) -> str:
    def one(found: re.Match[str]) -> str:
        name = found.group(1) or found.group(3)
        default = found.group(2)
        value = values.get(name, "")
        return value if value or default is None else default

    return _VAR.sub(one, text)


def _argv(rest: str) -> list[str]:
    if rest.startswith("["):
        try:  # stdlib json: this module runs in an image's bare virtualenv (no PyYAML)
            parsed = json.loads(rest)
        except (ValueError, RecursionError):  # a 10,000-deep [[[... is the shell form too
            parsed = None
        if isinstance(parsed, list) and all(isinstance(p, str) for p in parsed):
            return parsed
    return ["/bin/sh", "-c", rest]


def _env_pairs(rest: str, values: Mapping[str, str]) -> list[tuple[str, str]]:
    words = shlex.split(rest, posix=True)
    if words and "=" not in words[0]:
        return [(words[0], _expand(rest.partition(" ")[2].strip(), values))]
    pairs = []
    for word in words:
        key, _, value = word.partition("=")
        pairs.append((key, _expand(value, values)))
    return pairs


def _copy(rest: str, config: ImageConfig, values: Mapping[str, str]) -> None:
    words = shlex.split(rest, posix=True)
    flags = [w for w in words if w.startswith("--")]
    if any(f.startswith("--from") for f in flags):
        return
    paths = _argv(rest)[:] if rest.startswith("[") else [w for w in words if not w.startswith("--")]
    if len(paths) < 2:
        return
    *sources, dest = (_expand(p, values) for p in paths)
    into_dir = dest.endswith("/") or posixpath.basename(dest) in (".", "") or len(sources) > 1
    dest = posixpath.normpath(posixpath.join(config.workdir, dest))
    into_dir = into_dir or dest == config.workdir
    for source in sources:
        rel = posixpath.normpath(source.lstrip("/"))
        target = posixpath.join(dest, posixpath.basename(rel)) if into_dir and rel != "." else dest
        config.copies.append((rel, posixpath.normpath(target)))


def base_images(text: str, build_args: Mapping[str, str] | None = None) -> list[str]:
    """The images a Dockerfile's stages start ``FROM``, in order, once each: not ``scratch``
    and not an earlier stage's name (``FROM build AS run``); ``ARG``s before the first
    ``FROM`` and ``build_args`` expanded."""
    args = dict(build_args or {})
    stages: set[str] = set()
    found: list[str] = []
    seen_from = False
    for word, rest in _instructions(text):
        if word == "ARG" and not seen_from:
            name, sep, default = rest.partition("=")
            args.setdefault(name.strip(), default.strip().strip('"') if sep else "")
        elif word == "FROM":
            seen_from = True
            words = [w for w in rest.split() if not w.startswith("--")]
            if not words:
                continue
            image = _expand(words[0], args)
            if len(words) >= 3 and words[1].upper() == "AS":
                stages.add(words[2].lower())
            if image.lower() not in stages and image != "scratch" and image not in found:
                found.append(image)
    return found


def parse(
    text: str,
    build_args: Mapping[str, str] | None = None,
    inherited: Mapping[str, str] | None = None,
) -> ImageConfig:
    """The image settings of a Dockerfile's last stage.

    ``inherited`` stands in for the environment the base image sets (unknown
    without pulling it): ``$VAR`` expands from it when no ARG or ENV of the
    Dockerfile sets ``VAR``, so ``ENV PATH=/x:$PATH`` keeps the inherited PATH.
    """
    args = dict(build_args or {})
    base_env = dict(inherited or {})
    config = ImageConfig()
    cmd_set = False
    for word, rest in _instructions(text):
        values = {**args, **base_env, **config.env}
        if word == "FROM":
            config, cmd_set = ImageConfig(base=_expand(rest.split()[0], args)), False
        elif word == "ARG":
            name, sep, default = rest.partition("=")
            args.setdefault(name.strip(), default.strip().strip('"') if sep else "")
        elif word == "ENV":
            config.env.update(_env_pairs(rest, values))
        elif word == "WORKDIR":
            config.workdir = posixpath.normpath(
                posixpath.join(config.workdir, _expand(rest.strip().strip('"'), values))
            )
        elif word == "ENTRYPOINT":
            config.entrypoint = _argv(rest)
            if not cmd_set:
                config.cmd = []
        elif word == "CMD":
            config.cmd, cmd_set = _argv(rest), True
        elif word in ("COPY", "ADD"):
            _copy(rest, config, values)
        elif word == "RUN":
            config.runs.append(rest)
    return config
