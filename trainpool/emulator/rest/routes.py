"""Which HTTP request is which gRPC method: the ``google.api.http`` rules of Google's APIs.

Every method of Google's APIs carries an HTTP rule in its proto (for CreateCustomJob:
``post: "/v1/{parent=projects/*/locations/*}/customJobs" body: "custom_job"``). The generated
Python clients carry the same rules, for their REST transports, in
``<package>/services/<service>/transports/rest_base.py`` (``_Base<Method>._get_http_options()``,
one entry per binding), and the methods' full names in ``transports/grpc.py`` (the stubs'
``"/google.cloud.aiplatform.v1.JobService/CreateCustomJob"``, mixins such as
``google.longrunning.Operations`` included). The REST door reads both from the installed
clients: no route is written by hand. An API whose client has no REST transport
(Cloud Logging) gives its rules as data beside its service, quoted from its proto.

A :class:`Router` holds one API's routes (every method of every service of its packages,
served or not), tried most specific first; the door dispatches a match to the service
when the emulator serves it and answers UNIMPLEMENTED naming it otherwise.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from trainpool.emulator.rest.template import Template, parse, split_verb

_STUB = re.compile(r'"/([\w.]+)/(\w+)"')


@dataclass(frozen=True)
class Route:
    """One binding: HTTP ``verb`` on ``template`` is ``service``'s ``method``; ``body`` is
    ``""`` (none), ``"*"`` (the whole request) or the request field the body fills."""

    verb: str
    template: Template
    service: str
    method: str
    body: str = ""
    response_body: str = ""


def _rest_base(package: str, folder: str) -> type | None:
    try:
        module = importlib.import_module(f"{package}.services.{folder}.transports.rest_base")
    except ImportError:
        return None
    for name, value in vars(module).items():
        if name.startswith("_Base") and name.endswith("RestTransport") and inspect.isclass(value):
            return value
    return None


def _methods(package: str, folder: str) -> list[tuple[str, str]]:
    """``(service, method)`` of every stub of the service's gRPC transport."""
    module = importlib.import_module(f"{package}.services.{folder}.transports.grpc")
    return list(dict.fromkeys(_STUB.findall(inspect.getsource(module))))


def service_folders(package: str) -> list[str]:
    """The service folders of a generated client package (``job_service``, ...)."""
    services = importlib.import_module(f"{package}.services")
    return sorted(m.name for m in pkgutil.iter_modules(services.__path__) if m.ispkg)


def methods_of(package: str) -> list[tuple[str, str]]:
    """Every ``(service, method)`` of ``package``'s clients, mixins included, once each."""
    found: list[tuple[str, str]] = []
    for folder in service_folders(package):
        found += _methods(package, folder)
    return list(dict.fromkeys(found))


def package_routes(package: str) -> list[Route]:
    """The routes of every method of every service of a generated client ``package``."""
    routes: list[Route] = []
    for folder in service_folders(package):
        base = _rest_base(package, folder)
        if base is None:
            continue
        for service, method in _methods(package, folder):
            options = getattr(getattr(base, f"_Base{method}", None), "_get_http_options", None)
            if options is None:  # a streaming method: gRPC only
                continue
            for option in options():
                routes.append(
                    Route(
                        option["method"].upper(),
                        parse(option["uri"]),
                        service,
                        method,
                        option.get("body", ""),
                        option.get("response_body", ""),
                    )
                )
    return routes


class _Choice:
    """Routes of one verb, in the order they are tried, indexed by their literal segments:
    a path is tried only against the templates of its length whose literals it has (and
    those with ``**``), in the same order. Hundreds of routes share a verb; tried one by
    one, a GET cost about 0.2 ms."""

    def __init__(self, routes: list[Route]) -> None:
        self.routes = routes
        self._open: list[int] = []
        self._fixed: dict[int, dict[tuple[int, ...], dict[tuple[str, ...], list[int]]]] = {}
        for i, route in enumerate(routes):
            shape = route.template.shape
            if shape is None:
                self._open.append(i)
                continue
            where = tuple(at for at, literal in enumerate(shape) if literal is not None)
            key = tuple(shape[at] or "" for at in where)
            by_length = self._fixed.setdefault(len(shape), {})
            by_length.setdefault(where, {}).setdefault(key, []).append(i)

    def match(self, body: str, custom: str) -> tuple[Route, dict[str, str]] | None:
        segments = body.split("/")
        tried = list(self._open)
        for where, table in self._fixed.get(len(segments), {}).items():
            tried += table.get(tuple(segments[at] for at in where), ())
        for i in sorted(tried):
            values = self.routes[i].template.match(body, custom)
            if values is not None:
                return self.routes[i], values
        return None


class Router:
    """An API's routes, looked up by HTTP verb and path (without any host prefix)."""

    def __init__(self, routes: Iterable[Route]) -> None:
        unique: dict[tuple[str, str], Route] = {}
        for route in routes:
            unique.setdefault((route.verb, route.template.text), route)
        self.routes = sorted(
            unique.values(),
            key=lambda r: (-r.template.literals, "**" in r.template.text, r.template.text),
        )
        by_verb: dict[tuple[str, str], list[Route]] = {}
        for route in self.routes:
            by_verb.setdefault((route.verb, route.template.verb), []).append(route)
        self._by_verb = {key: _Choice(routes) for key, routes in by_verb.items()}

    def match(self, verb: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route of ``verb`` ``path`` and its path variables, or None."""
        body, custom = split_verb(path)
        choice = self._by_verb.get((verb, custom))
        return choice.match(body, custom) if choice is not None else None

    def allowed(self, path: str) -> list[str]:
        """The verbs some route takes ``path`` with (for a 405's words)."""
        body, custom = split_verb(path)
        return sorted({r.verb for r in self.routes if r.template.match(body, custom) is not None})


class Routers:
    """Each API's :class:`Router`, made on first use (importing an API's clients can take
    most of a second)."""

    def __init__(self, sources: dict[str, tuple[tuple[str, ...], tuple[Route, ...]]]) -> None:
        self._sources = sources
        self._made: dict[str, Router] = {}
        self._lock = threading.Lock()

    def __contains__(self, api: str) -> bool:
        return api in self._sources

    def get(self, api: str) -> Router:
        made = self._made.get(api)
        if made is not None:  # every request: no lock to hand over between its threads
            return made
        with self._lock:
            if api not in self._made:
                packages, extra = self._sources[api]
                routes = [route for p in packages for route in package_routes(p)]
                self._made[api] = Router([*extra, *routes])
            return self._made[api]
