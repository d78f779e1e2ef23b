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
from pathlib import Path

import pytest

from cradle_kg.storage.graph import GraphStore
from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from cradle_kg.storage.sparql_scratch import ScratchOxigraph

GRAPH_BACKENDS = ("embedded", "oxigraph-serve", "virtuoso")
#: each remote backend: the fixture giving its server with an emptied dataset (an object
#: with ``setting()``, the ``CRADLE_GRAPH_URL`` value naming it) — another engine is one
#: more entry here and in ``GRAPH_BACKENDS``
REMOTE_FIXTURES = {"oxigraph-serve": "fresh_oxigraph", "virtuoso": "fresh_virtuoso"}


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
    if request.param in REMOTE_FIXTURES:
        server = request.getfixturevalue(REMOTE_FIXTURES[request.param])
        monkeypatch.setenv(GRAPH_URL_ENV, server.setting())
    else:
        monkeypatch.delenv(GRAPH_URL_ENV, raising=False)
    return str(request.param)


def read_home_graph(home: Path) -> GraphStore:
    """A reader of the home's graph, whichever store it uses: the remote store its setting
    names (``CRADLE_GRAPH_URL`` under ``--graph-backend``), else the embedded store opened
    read-only (no lock: a reader beside a writer)."""
    from cradle_kg.home import Home
    from cradle_kg.storage.graph_opening import home_graph_setting, open_graph_store
    from cradle_kg.storage.oxigraph import OxigraphStore

    if home_graph_setting(home) is not None:
        return open_graph_store(home)
    return OxigraphStore(Home(home).graph, read_only=True)
