"""One served demo home for the query-cap tests (``test_343``, ``test_353``): ask its open
``/sparql``, and check that a query past a cap is a 400 at once, its worker never replaced."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests import oneshot

from ..server.conftest import Server, start_server, stop_server
from .homes import opened_demo_home

#: what the endpoint says of a query past ``--max-query-patterns`` (100)
OVER_PATTERN_CAP = "triple patterns or path steps, over the cap of 100"


def served_demo(name: str) -> Callable[[pytest.TempPathFactory], Iterator[Server]]:
    """A module-scoped fixture serving a demo home (``server = served_demo("t343")``)."""
    @pytest.fixture(scope="module")
    def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
        home = opened_demo_home(tmp_path_factory, name)
        srv = start_server(["--home", str(home)],
                           tmp_path_factory.mktemp("l" + name) / "s.log", home)
        yield srv
        stop_server(srv)
    return server


def ask(server: Server, query: str) -> tuple[int, str]:
    r = oneshot.post(server.sparql, content=query.encode(), timeout=120,
                     headers={"content-type": "application/sparql-query",
                              "accept": "application/sparql-results+json"})
    return r.status_code, r.text


def replaced(server: Server) -> int:
    return int(oneshot.get(server.url + "/healthz").json()["workers_replaced"])


def assert_refused_at_once(server: Server, query: str, says: str) -> None:
    """``query`` is a 400 saying ``says``, and no worker was replaced (before the caps: a
    503 at the timeout, its worker replaced)."""
    before = replaced(server)
    status, text = ask(server, query)
    assert status == 400, (status, text[:300])
    assert says in text, text[:300]
    assert replaced(server) == before
