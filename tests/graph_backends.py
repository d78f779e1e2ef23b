"""Graph backends for the tests: the embedded on-disk Oxigraph store, and two real
SPARQL 1.1 servers of two vendors started once per session: ``oxigraph serve`` and
Virtuoso Open Source (``virtuoso``, :mod:`tests.graph_engines`).

``oxigraph_server`` starts a throw-away server (:mod:`cradle_kg.storage.sparql_scratch`: a
temp dir, a free port on 127.0.0.1) the first time a test asks for it, and stops it when
the session ends. A missing ``oxigraph`` command fails the test loudly, never skips it
(the ``dev`` extra installs it).

``graph_backend`` parametrises a test over the three stores: on ``oxigraph-serve`` it
empties the server's dataset (a fresh one for each test) and points ``CRADLE_GRAPH_URL``
at it, so every runtime, CLI command and helper the test opens uses it; on ``virtuoso``
the same with the server's three URLs and ``CRADLE_GRAPH_USER`` /
``CRADLE_GRAPH_PASSWORD`` (basic auth); on ``embedded`` it clears the variables
(``<home>/graph``). Tests opt in with
``@pytest.mark.usefixtures("graph_backend")`` (or by naming the fixture).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from cradle_kg.storage.sparql_scratch import ScratchOxigraph
from cradle_kg.storage.virtuoso_scratch import ScratchVirtuoso

GRAPH_BACKENDS = ("embedded", "oxigraph-serve", "virtuoso")


@pytest.fixture(scope="session")
def oxigraph_server() -> Iterator[ScratchOxigraph]:
    server = ScratchOxigraph()  # raises OxigraphUnavailable (with the install command)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fresh_oxigraph(oxigraph_server: ScratchOxigraph) -> ScratchOxigraph:
    """The session's server with an empty dataset."""
    oxigraph_server.clear()
    return oxigraph_server


@pytest.fixture(params=GRAPH_BACKENDS)
def graph_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ("CRADLE_GRAPH_USER", "CRADLE_GRAPH_PASSWORD", "CRADLE_GRAPH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    if request.param == "oxigraph-serve":
        server: ScratchOxigraph = request.getfixturevalue("fresh_oxigraph")
        monkeypatch.setenv(GRAPH_URL_ENV, server.url)
    elif request.param == "virtuoso":
        engine: ScratchVirtuoso = request.getfixturevalue("fresh_virtuoso")
        e = engine.endpoints
        monkeypatch.setenv(GRAPH_URL_ENV, f"query={e.query} update={e.update} "
                                          f"store={e.graph_store}")
        monkeypatch.setenv("CRADLE_GRAPH_USER", e.user)
        monkeypatch.setenv("CRADLE_GRAPH_PASSWORD", e.password)
    else:
        monkeypatch.delenv(GRAPH_URL_ENV, raising=False)
    return str(request.param)
