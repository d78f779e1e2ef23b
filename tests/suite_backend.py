"""The whole suite on another backend: ``--journal-backend`` and ``--graph-backend``.

``./dev test --journal-backend postgresql`` runs every test with its homes' journal on the
throw-away PostgreSQL server (``CRADLE_JOURNAL_URL`` pointing at a fresh migrated schema);
``./dev test --graph-backend oxigraph-serve`` runs every test with its homes' graph in a
throw-away ``oxigraph serve`` (``CRADLE_GRAPH_URL``). The default (``sqlite`` /
``embedded``) changes nothing. It is a plugin (``-p tests.suite_backend`` in pyproject),
not copies of tests — a backend contract, as datasette and SQLAlchemy dialects do.

Scopes. A test gets a backend of its own: a fresh schema, an emptied dataset. A fixture
of module or session scope that builds a home (the module's shared demo home, the session's
pilots demo) builds it on a backend of its own — one schema / one ``oxigraph serve`` per
*root* fixture (one that uses no other such fixture) and per module or session — and the
tests that use such a fixture run on that one, since they read what it built. A wide
fixture that wrote nothing there (a browser, a template database) leaves its tests on a
fresh backend.

Three kinds of test keep their own choice: those that ask for a backend themselves
(``journal_backend``, ``pg_url``, ``postgres``; ``graph_backend``, ``fresh_oxigraph``,
``oxigraph_server``, ``virtuoso``, ``fresh_virtuoso``) — the variables are cleared for them, as
in the default run; and those marked ``sqlite_only(reason)`` / ``embedded_graph_only(reason)``
(a test of the SQLite file itself, of the embedded store's files), which are skipped with
their reason on the other backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cradle_kg.storage import JOURNAL_URL_ENV
from cradle_kg.storage.graph_config import GRAPH_URL_ENV

JOURNALS = ("sqlite", "postgresql")
GRAPHS = ("embedded", "oxigraph-serve")
#: fixtures through which a test chooses its journal / graph itself
OWN_JOURNAL = frozenset({"journal_backend", "pg_url", "postgres"})
OWN_GRAPH = frozenset({"graph_backend", "fresh_oxigraph", "oxigraph_server", "virtuoso",
                       "fresh_virtuoso"})
#: the backends' own fixtures, and conftest's hand-over of the session's temporary folders
#: to tests/demo_template.py: never "a fixture that builds a home"
INFRA = OWN_JOURNAL | OWN_GRAPH | {"_suite_backend", "_demo_template_factory"}
WIDE = ("session", "package", "module", "class")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cradle-kg backends")
    group.addoption("--journal-backend", choices=JOURNALS, default="sqlite",
                    help="run every test with its homes' journal on this backend "
                         "(postgresql: a throw-away server, a fresh schema per test)")
    group.addoption("--graph-backend", choices=GRAPHS, default="embedded",
                    help="run every test with its homes' graph on this store "
                         "(oxigraph-serve: a throw-away server, emptied per test)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only(reason): a test of the embedded SQLite "
                            "journal itself; skipped under --journal-backend postgresql")
    config.addinivalue_line("markers", "embedded_graph_only(reason): a test of the embedded "
                            "store's files; skipped under --graph-backend oxigraph-serve")
    config.stash[_STATE] = _Backends(config.getoption("--journal-backend"),
                                     config.getoption("--graph-backend"))


def pytest_report_header(config: pytest.Config) -> str | None:
    state = config.stash[_STATE]
    if state.journal == "sqlite" and state.graph == "embedded":
        return None
    return f"cradle-kg backends: journal {state.journal}, graph {state.graph}"


class _Backends:
    """The servers and the per-scope backends of one session."""

    def __init__(self, journal: str, graph: str) -> None:
        self.journal = journal
        self.graph = graph
        self._pg: Any = None
        self._oxigraph: Any = None  # the per-test server, emptied before each test
        self._journal_urls: dict[str, str] = {}
        self._graphs: dict[str, Any] = {}  # scope key -> a server of that scope
        #: how many tests ran on the selected backend, on a scoped one, on their own choice
        self.counts = {"fresh": 0, "scoped": 0, "own": 0}
        #: the scoped backends a fixture actually wrote to (a journal with events, a store
        #: with quads): a test using two wide fixtures runs on the one that built a home
        self.used: set[str] = set()

    @property
    def active(self) -> bool:
        return self.journal != "sqlite" or self.graph != "embedded"

    def postgres(self) -> Any:
        if self._pg is None:
            from cradle_kg.storage.pg_scratch import ScratchPostgres

            self._pg = ScratchPostgres()  # raises PostgresUnavailable (with the install hint)
        return self._pg

    def oxigraph(self) -> Any:
        if self._oxigraph is None:
            from cradle_kg.storage.sparql_scratch import ScratchOxigraph

            self._oxigraph = ScratchOxigraph()
        return self._oxigraph

    def fresh_journal(self) -> str:
        return str(self.postgres().journal_schema())

    def scoped_journal(self, key: str) -> str:
        if key not in self._journal_urls:
            self._journal_urls[key] = self.fresh_journal()
        return self._journal_urls[key]

    def scoped_graph(self, key: str) -> str:
        if key not in self._graphs:
            from cradle_kg.storage.sparql_scratch import ScratchOxigraph

            self._graphs[key] = ScratchOxigraph()
        return str(self._graphs[key].setting())

    def note_use(self, key: str) -> None:
        """Remember ``key`` if its fixture wrote to it."""
        import psycopg

        url = self._journal_urls.get(key)
        if url is not None:
            with psycopg.connect(url) as conn:  # migrated: the table is there
                found = conn.execute("SELECT EXISTS (SELECT 1 FROM events)").fetchone()
            if found is not None and found[0]:
                self.used.add(key)
        server = self._graphs.get(key)
        if server is not None:
            from cradle_kg.storage.graph_config import resolve
            from cradle_kg.storage.sparql_http import SparqlHttpStore

            store = SparqlHttpStore(resolve(server.endpoints()))
            try:
                if store.ask("ASK { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"):
                    self.used.add(key)
            finally:
                store.close()

    def drop_scope(self, key: str) -> None:
        self.used.discard(key)
        self._journal_urls.pop(key, None)
        server = self._graphs.pop(key, None)
        if server is not None:
            server.stop()

    def drop_scopes(self, *prefixes: str) -> None:
        for key in [k for k in {*self._journal_urls, *self._graphs} if k.startswith(prefixes)]:
            self.drop_scope(key)

    def env_for_scope(self, key: str) -> dict[str, str]:
        env: dict[str, str] = {}
        if self.journal == "postgresql":
            env[JOURNAL_URL_ENV] = self.scoped_journal(key)
        if self.graph == "oxigraph-serve":
            env[GRAPH_URL_ENV] = self.scoped_graph(key)
        return env

    def stop(self) -> None:
        for key in list(self._graphs):
            self.drop_scope(key)
        for server in (self._oxigraph, self._pg):
            if server is not None:
                server.stop()
        self._oxigraph = self._pg = None


_STATE = pytest.StashKey[_Backends]()


def _root_keys(item: Any, start: list[str]) -> list[str]:
    """The backends the wide fixtures ``start`` build on: one per *root* (a wide project
    fixture that uses no other one), reached through the fixtures' arguments; the key
    names the root and the node it is instantiated for (its module, class or the session).
    Two homes built by two unrelated module fixtures get two journals; a fixture built on
    another one's home shares that one's."""
    defs = getattr(item, "_fixtureinfo", None)
    name2defs = defs.name2fixturedefs if defs is not None else {}

    def wide(name: str) -> Any:
        found = name2defs.get(name, ())
        return found[-1] if found and _builds_homes(found[-1]) else None

    roots: list[str] = []
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen or (fixturedef := wide(name)) is None:
            continue
        seen.add(name)
        deps = [arg for arg in fixturedef.argnames if wide(arg) is not None]
        if deps:
            todo.extend(deps)
            continue
        scope = fixturedef.scope
        kind = {"module": pytest.Module, "class": pytest.Class}.get(scope)
        node = item.getparent(kind) if kind is not None else None
        where = "session" if node is None else f"{scope}:{node.nodeid}"
        roots.append(f"{where}:{name}")
    return sorted(roots)


def _builds_homes(fixturedef: Any) -> bool:
    """A project fixture (not pytest's, not a plugin's, not a backend's own) of wide scope."""
    return (fixturedef.scope in WIDE and fixturedef.argname not in INFRA
            and bool(getattr(fixturedef, "baseid", "")))


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Iterator[None]:
    """A wide-scope project fixture builds on the backend of its scope."""
    state = request.config.stash[_STATE]
    if not state.active or not _builds_homes(fixturedef):
        yield
        return
    item = getattr(request, "_pyfuncitem", None)
    keys = _root_keys(item, [fixturedef.argname]) if item is not None else []
    env = state.env_for_scope(keys[0]) if keys else {}
    # a fixture of tests that choose their backend themselves builds as they would
    names = set(getattr(getattr(item, "_fixtureinfo", None), "names_closure", ()))
    if names & OWN_JOURNAL:
        env.pop(JOURNAL_URL_ENV, None)
    if names & OWN_GRAPH:
        env.pop(GRAPH_URL_ENV, None)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        yield
    if keys:
        state.note_use(keys[0])


def _builds_own_home(info: Any, closure: list[str]) -> bool:
    """The test uses a function-scoped fixture of the project's (its own home, most
    likely)."""
    if info is None:
        return False
    for name in closure:
        defs = info.name2fixturedefs.get(name, ())
        if (defs and defs[-1].scope == "function" and name not in INFRA
                and bool(getattr(defs[-1], "baseid", ""))):
            return True
    return False


@pytest.fixture(autouse=True)
def _suite_backend(request: pytest.FixtureRequest,
                   monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Point the test's homes at the selected backend (see the module's docstring)."""
    state = request.config.stash[_STATE]
    item = request.node
    if state.journal == "postgresql" and (mark := item.get_closest_marker("sqlite_only")):
        pytest.skip(f"SQLite journal only: {mark.args[0] if mark.args else ''}")
    if state.graph == "oxigraph-serve" and (
            mark := item.get_closest_marker("embedded_graph_only")):
        pytest.skip(f"embedded graph store only: {mark.args[0] if mark.args else ''}")
    if not state.active:
        yield
        return
    info = getattr(item, "_fixtureinfo", None)
    # the fixtures the test asked for (statically): getfixturevalue calls made by other
    # fixtures at run time must not count
    closure = list(info.names_closure) if info is not None else []
    names = set(closure)
    # the wide fixtures that built a home the test reads: those that wrote to their
    # backend first; one that wrote nothing (a home prepared empty, a browser) only for a
    # test that builds no home of its own (a function fixture of the project's), since a
    # template the test copies from must not become the test's journal
    roots = _root_keys(item, [n for n in closure if n not in INFRA])
    keys = [k for k in roots if k in state.used]
    if not keys and not _builds_own_home(info, closure):
        keys = roots
    scoped = state.env_for_scope(keys[0]) if keys else {}
    own = (state.journal == "postgresql" and bool(names & OWN_JOURNAL)) or (
        state.graph == "oxigraph-serve" and bool(names & OWN_GRAPH))
    state.counts["own" if own else "scoped" if scoped else "fresh"] += 1
    if state.journal == "postgresql":
        if names & OWN_JOURNAL:
            monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
        else:
            monkeypatch.setenv(JOURNAL_URL_ENV,
                               scoped.get(JOURNAL_URL_ENV) or state.fresh_journal())
    if state.graph == "oxigraph-serve":
        if names & OWN_GRAPH:
            monkeypatch.delenv(GRAPH_URL_ENV, raising=False)
        elif GRAPH_URL_ENV in scoped:
            monkeypatch.setenv(GRAPH_URL_ENV, scoped[GRAPH_URL_ENV])
        else:
            server = state.oxigraph()
            server.clear()
            monkeypatch.setenv(GRAPH_URL_ENV, server.setting())
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A module's backends go once its fixtures are torn down."""
    yield
    module = item.getparent(pytest.Module)
    if module is None:
        return
    if nextitem is None or nextitem.getparent(pytest.Module) is not module:
        item.config.stash[_STATE].drop_scopes(f"module:{module.nodeid}:",
                                              f"class:{module.nodeid}::")


@pytest.fixture(scope="session")
def postgres(request: pytest.FixtureRequest) -> Any:
    """The session's throw-away PostgreSQL server (one for the whole run, whichever
    tests ask for it; it stops when the session ends)."""
    return request.config.stash[_STATE].postgres()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker of ``pytest -n`` (pytest-xdist) hands its counts to the controller."""
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out["cradle_backend_counts"] = dict(session.config.stash[_STATE].counts)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """The controller adds up its workers' counts (the summary's line covers every test)."""
    counts = getattr(node, "workeroutput", {}).get("cradle_backend_counts", {})
    total = node.config.stash[_STATE].counts
    for key, value in counts.items():
        total[key] += value


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Say where the tests ran: a run that silently fell back to SQLite proves nothing."""
    state = config.stash[_STATE]
    if state.active:
        c = state.counts
        terminalreporter.write_line(
            f"cradle-kg backends (journal {state.journal}, graph {state.graph}): "
            f"{c['fresh']} tests on a fresh one, {c['scoped']} on their module's or "
            f"session's, {c['own']} chose their own")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _STATE in config.stash:
        config.stash[_STATE].stop()
