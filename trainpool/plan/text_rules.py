"""Rules of the text a job carries: NUL characters, environment names, ``gs://`` URIs,
display names. The planner and the emulator both call them (one rule, one place).

- **NUL**: a process's arguments, command and environment are C strings (``execve(2)``),
  so a NUL character cannot reach a replica; no string of a job spec may hold one, and
  neither may a display name (trainpool's rule: Vertex would create the job and fail it).
- **Environment names**: "Name of the environment variable. Must be a valid C identifier."
  (``google/cloud/aiplatform/v1/env_var.proto``): ``[A-Za-z_][A-Za-z0-9_]*``. At most
  100 variables per container or package ("Maximum limit is 100.", ``custom_job.proto``
  ``ContainerSpec.env`` and ``PythonPackageSpec.env``).
- **Package URIs**: at most 100 ("The maximum number of package URIs is 100.",
  ``PythonPackageSpec.package_uris``), each a ``gs://`` URI by Cloud Storage's naming rules.
- **gs:// URIs** (every field that takes one): :func:`trainpool.cluster_env.gcs.split`,
  Cloud Storage's bucket and object naming rules, with no empty, ``.`` or ``..`` segment.
- **Display names**: "can be up to 128 characters long and can consist of any UTF-8
  characters" (``CustomJob.display_name`` and the other resources'); required.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from trainpool.cluster_env.gcs import GcsUriError, split
from trainpool.errors import brief

MAX_ENV = 100
MAX_PACKAGE_URIS = 100
MAX_DISPLAY_NAME = 128
MAX_GCS_URI = len("gs://") + 222 + 1 + 1024 + 1
"""The longest URI Cloud Storage's rules allow (a 222-character bucket, a 1024-byte object)."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_RULE = "a C identifier: a letter or '_', then letters, digits or '_' (no '=', no NUL)"
NUL_RULE = "text without NUL characters (a process cannot be given one)"


def nul_paths(obj: Any, path: str = "") -> Iterator[str]:
    """The paths (``a.b[2].c``; a key's own path ends in ``{key}``) of strings in ``obj``
    that hold a NUL character."""
    if isinstance(obj, str):
        if "\0" in obj:
            yield path
    elif isinstance(obj, dict):
        for key, value in obj.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and "\0" in key:
                yield f"{brief(where, 60, quoted=False)}{{key}}"
            yield from nul_paths(value, where)
    elif isinstance(obj, list | tuple):
        for index, value in enumerate(obj):
            yield from nul_paths(value, f"{path}[{index}]")


def env_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name an environment variable, or None."""
    if isinstance(name, str) and ENV_NAME.fullmatch(name):
        return None
    return f"name {brief(name)}; accepted: {ENV_RULE}"


def gcs_uri_problem(uri: object, field: str) -> str | None:
    """Why ``uri`` is not a ``gs://`` URI Cloud Storage accepts (the message names
    ``field``), or None."""
    if not isinstance(uri, str):
        return f"{field}: {brief(uri)}; accepted: a gs://BUCKET/PATH URI"
    if len(uri) > MAX_GCS_URI:
        return (
            f"{field}: {brief(uri)} is longer than any gs:// URI; accepted: gs://BUCKET/OBJECT "
            "with a bucket of at most 222 characters and an object of at most 1024 bytes"
        )
    try:
        split(uri, field)
    except GcsUriError as err:
        return str(err)
    return None


def display_name_problem(value: object) -> str | None:
    """Why ``value`` cannot be a display name, or None."""
    if not isinstance(value, str) or not value:
        return f"{brief(value)} is empty; accepted: a name of 1-{MAX_DISPLAY_NAME} characters"
    if len(value) > MAX_DISPLAY_NAME:
        return (
            f"{brief(value, 40)} has {len(value):,} characters; "
            f"accepted: at most {MAX_DISPLAY_NAME}"
        )
    if "\0" in value:
        return f"{brief(value)} holds a NUL character; accepted: {NUL_RULE}"
    return None
