"""A cluster request's errors: the one bad-input shape (:mod:`trainpool.errors`)."""

from __future__ import annotations

from trainpool.errors import InputError, Problem


class SpecError(InputError):
    """A bad cluster request; ``str()`` is one problem per line, each
    ``field: value ...; accepted: ...``."""


__all__ = ["Problem", "SpecError"]
