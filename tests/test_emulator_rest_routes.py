"""A request's route: the first of its verb's routes, most specific first, whose template
matches, found through an index of the templates' literal segments (``Router.match``)."""

from __future__ import annotations

import re

import pytest

from trainpool.emulator.rest.apis import SERVED_APIS
from trainpool.emulator.rest.routes import Route, Router, Routers
from trainpool.emulator.rest.template import parse, split_verb


def _every_route_in_turn(router: Router, verb: str, path: str) -> object:
    """What the index must answer: each route of ``verb`` tried in the router's order."""
    body, custom = split_verb(path)
    for route in router.routes:
        if route.verb == verb:
            values = route.template.match(body, custom)
            if values is not None:
                return route, values
    return None


def _paths(template: str) -> list[str]:
    """Paths near a template: it filled in, one segment more or less, an empty segment."""
    found = []
    for fill in ("x1", "a%2Fb", ""):
        path = re.sub(r"\{([\w.]+)\}", fill or "y", template)
        path = re.sub(r"\{[\w.]+=([^}]*)\}", r"\1", path).replace("**", "a/b/c")
        path = path.replace("*", fill)
        found += [path, f"{path}/more", path.rsplit("/", 1)[0], f"{path}/", f"/{path}"]
    return found


@pytest.mark.parametrize("api", sorted(SERVED_APIS))
def test_the_index_finds_the_route_trying_every_route_would(api: str) -> None:
    router = Routers(SERVED_APIS).get(api)
    matched = 0
    for route in router.routes[:: max(1, len(router.routes) // 150)]:  # 150 of each API's
        for path in _paths(route.template.text):
            for verb in ("GET", "POST"):
                expected = _every_route_in_turn(router, verb, path)
                assert router.match(verb, path) == expected, (verb, path)
                matched += expected is not None
    assert matched > 0


def test_the_most_specific_template_wins_whatever_the_index() -> None:
    routes = [
        Route("GET", parse("/v1/{name=projects/*/things/*}"), "S", "GetThing"),
        Route("GET", parse("/v1/{name=projects/*/things/special}"), "S", "GetSpecial"),
        Route("GET", parse("/v1/{name=**}"), "S", "GetAnything"),
        Route("POST", parse("/v1/{name=projects/*/things/*}:run"), "S", "Run"),
    ]
    router = Router(routes)
    assert router.match("GET", "/v1/projects/p/things/special")[0].method == "GetSpecial"
    assert router.match("GET", "/v1/projects/p/things/t") == (
        routes[0],
        {"name": "projects/p/things/t"},
    )
    assert router.match("GET", "/v1/projects/p/others/t")[0].method == "GetAnything"
    assert router.match("GET", "/v1/projects//things/t")[0].method == "GetAnything"
    assert router.match("POST", "/v1/projects/p/things/t:run")[0].method == "Run"
    assert router.match("POST", "/v1/projects/p/things/t") is None


def test_a_template_names_its_segments() -> None:
    assert parse("/v1/{parent=projects/*/locations/*}/customJobs").shape == (
        "v1",
        "projects",
        None,
        "locations",
        None,
        "customJobs",
    )
    assert parse("/v1/{name}:cancel").shape == ("v1", None)
    assert parse("/v1/{name=projects/**}").shape is None
