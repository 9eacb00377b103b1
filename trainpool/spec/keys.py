"""Key style and number shape of spec dicts: camelCase REST ⇄ snake_case proto, ints as ints.

Map keys chosen by users (``labels``) are data, not field names: they are never converted.
"""

from __future__ import annotations

import re
from typing import Any

_USER_KEYED = frozenset({"labels"})
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])([A-Z])")


def coerce_ints(obj: Any) -> Any:
    """A copy of ``obj`` with every whole float (``4.0``, from a KFP Struct) turned into an int.

    Other floats (``4.5``) are left alone, so that validation names them as errors.
    """
    if isinstance(obj, float) and obj.is_integer():
        return int(obj)
    if isinstance(obj, dict):
        return {key: coerce_ints(value) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [coerce_ints(value) for value in obj]
    return obj


def camel(name: str) -> str:
    """``boot_disk_size_gb`` → ``bootDiskSizeGb``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def snake(name: str) -> str:
    """``bootDiskSizeGb`` → ``boot_disk_size_gb``."""
    return _CAMEL_HUMP.sub(r"_\1", name).lower()


def _convert(obj: Any, rename: Any) -> Any:
    if isinstance(obj, dict):
        return {
            rename(key): (
                dict(value)
                if key in _USER_KEYED and isinstance(value, dict)
                else _convert(value, rename)
            )
            for key, value in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [_convert(value, rename) for value in obj]
    return obj


def to_rest(obj: Any) -> Any:
    """A copy with every field name in camelCase (the Vertex REST JSON form)."""
    return _convert(obj, camel)


def to_snake(obj: Any) -> Any:
    """A copy with every field name in snake_case (the proto ``to_dict()`` form)."""
    return _convert(obj, snake)
