"""A pipeline parameter that a task takes as it is, declared once: by the task's component.

The distributed-training pipeline passes its cluster knobs (``worker_count``,
``machine_type``, ...) straight to ``plan_cluster`` and the Reduction Server knobs to
``size_reduction_server``. :func:`inputs_of` gives the pipeline those parameters with the
component's own names, types and defaults, so they are written in one place (the
component, whose docstring says what each does) and cannot drift apart. KFP reads a
pipeline's parameters with ``inspect.signature`` and calls its function with them in that
order (``kfp.dsl.graph_component.GraphComponent``); the pipeline's function takes them as
``**knobs``.
"""

# No `from __future__ import annotations`: KFP reads the parameter annotations as types.
import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any


def inputs_of(
    component: Any, names: Sequence[str], *, after: str, prefix: str = ""
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add ``component``'s inputs ``names`` to the decorated pipeline function's parameters,
    after its parameter ``after``, each named ``prefix + name`` (``gate_metric`` for the
    gate's ``metric``); the function gets them in ``**knobs``."""
    inherited_from = inspect.signature(component.python_func).parameters
    unknown = [name for name in names if name not in inherited_from]
    if unknown:
        raise ValueError(
            f"inputs_of: {', '.join(unknown)}: not inputs of {component.name}; "
            f"accepted: {', '.join(inherited_from)}"
        )
    inherited = [
        inherited_from[name].replace(
            name=prefix + name, kind=inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        for name in names
    ]

    def decorate(body: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(body)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        at = [p.name for p in own].index(after) + 1
        parameters = own[:at] + inherited + own[at:]
        order = [p.name for p in parameters]

        @functools.wraps(body)
        def pipeline(*args: Any, **kwargs: Any) -> Any:
            given = {**dict(zip(order, args, strict=False)), **kwargs}
            return body(**given)

        pipeline.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        return pipeline

    return decorate
