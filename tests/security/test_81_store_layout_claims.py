"""What a graph store's meta graph says of its projection layout is checked, not obeyed.

Finding: a store whose watermark is set is rebuilt whenever its recorded layout
(``cradle:projectionVersion``) is not this code's (3) — meant for a store an *older*
cradle-kg wrote. The store's word was taken as it came:

* a layout *newer* than this code's (a newer cradle-kg projecting into the same store, or
  any writer of the meta graph) made ``graph sync`` drop the projection's graphs and
  project the whole journal again in the old layout, exit 0 — and the newer projector
  then rebuilt it back: each rebuilt the store on every round, for ever;
* a store that does not keep what it is sent (read-only behind a proxy answering 204, or
  another writer putting its layout back) was rebuilt again and again: ``graph follow
  --once`` never ended, each round dropping and reloading every graph;
* a layout of ``"²"`` passed ``str.isdigit`` and ``int()`` raised: ``error: unexpected
  ValueError`` from ``graph sync`` and ``follow``, and out of ``Runtime.close`` (its
  graph sync suppresses only typed errors), which then closed neither the journal nor the
  home's lease.

Now a newer layout is ``graph_layout_newer`` (one ``error:`` line, exit 2, nothing
written: ``graph rebuild`` takes the store back on purpose), a layout that is not one
number of ASCII digits is ``graph_bad_response``, and a rebuild whose layout the store
does not keep is ``graph_bad_response`` after one rebuild — never a loop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from cradle_kg import Runtime
from cradle_kg.storage.graph import META_GRAPH, PROJECTION_VERSION
from cradle_kg.storage.graph_config import GRAPH_URL_ENV, parse_setting, resolve
from cradle_kg.storage.sparql_http import SparqlHttpStore
from cradle_kg.storage.sparql_scratch import ScratchOxigraph

from .sparql_target import StoreHandler, serving
from .test_80_store_watermark_ahead import _home as home_with

_INT = "http://www.w3.org/2001/XMLSchema#integer"
_SEQ = "https://w3id.org/cradle#projectedSeq"
_VERSION = "https://w3id.org/cradle#projectionVersion"


def _home(path: Path) -> int:
    return home_with(path, 3, "t")  # test_80's: a home of three governed calls


def _cli(home: Path, url: str, *args: str, timeout: float = 120
         ) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-m", "cradle_kg", *args, "--home", str(home)],
                              capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, GRAPH_URL_ENV: url})
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{' '.join(args)}` did not end within {timeout} s")


def _one_error_line(done: subprocess.CompletedProcess[str], says: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr, done.stderr
    assert says in done.stderr, done.stderr


def test_a_newer_layout_is_refused_not_rebuilt_down(oxigraph_server: ScratchOxigraph,
                                                    tmp_path: Path) -> None:
    oxigraph_server.clear()
    url = oxigraph_server.setting()
    home = tmp_path / "home"
    head = _home(home)
    assert _cli(home, url, "graph", "sync").returncode == 0
    store = SparqlHttpStore(resolve(parse_setting(url)))
    newer = PROJECTION_VERSION + 1
    try:  # what a newer cradle-kg leaves: its watermark behind the head, its next layout
        meta = f"<{META_GRAPH}>"
        store._update(f"DELETE WHERE {{ GRAPH {meta} {{ {meta} ?p ?o }} }} ;\n"
                      f"INSERT DATA {{ GRAPH {meta} {{ {meta} <{_SEQ}> \"{head - 2}\"^^<{_INT}>"
                      f" . {meta} <{_VERSION}> \"{newer}\"^^<{_INT}> }} }}")
        graphs = store.graph_names()
        for args in (("graph", "sync"), ("graph", "follow", "--once")):
            _one_error_line(_cli(home, url, *args),
                            "error: the graph store was written with projection layout "
                            f"{newer}")
        assert (store.projected_seq(), store.layout()) == (head - 2, newer)
        assert store.graph_names() == graphs
        # taken back on purpose
        assert _cli(home, url, "graph", "rebuild").returncode == 0
        assert (store.projected_seq(), store.layout()) == (head, PROJECTION_VERSION)
    finally:
        store.close()


class _Ignoring(StoreHandler):
    """A store that answers every update 204 and keeps none: its meta graph says what the
    test sets, whatever is written."""

    layout = "2"
    updates: list[str] = []

    def do_POST(self) -> None:
        body = self.body()
        if self.path.startswith("/update") or self.path.startswith("/store"):
            self.updates.append(body)
            self.reply(204)
            return
        query = parse_qs(body).get("query", [""])[0]
        value = "1" if _SEQ in query else self.layout if _VERSION in query else None
        rows = [{"v": {"type": "literal", "value": value, "datatype": _INT}}] \
            if value is not None else []
        self.reply(200, "application/sparql-results+json", json.dumps(
            {"head": {"vars": ["v"]}, "results": {"bindings": rows}}).encode())


def _ignoring(layout: str) -> Iterator[tuple[str, list[str]]]:
    updates: list[str] = []
    with serving(type("H", (_Ignoring,), {"layout": layout, "updates": updates})) as url:
        yield url, updates


def test_a_store_that_keeps_no_rebuild_is_rebuilt_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _home(home)
    for url, updates in _ignoring("2"):
        done = _cli(home, url, "graph", "follow", "--once", timeout=60)
        _one_error_line(done, "did not keep the projection layout its rebuild wrote")
        # a rebuild's first write: the store marked as being rebuilt (layout 0, test_404)
        rebuilds = [u for u in updates if f'<{_VERSION}> "0"' in u]
        assert len(rebuilds) == 1, len(rebuilds)


def test_a_layout_that_is_not_a_number_is_one_error_line(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    home = tmp_path / "home"
    _home(home)
    for url, updates in _ignoring("\u00b2"):
        for args in (("graph", "sync"), ("graph", "follow", "--once")):
            _one_error_line(_cli(home, url, *args),
                            "the graph store's projection layout '²' is not a number")
        assert updates == []
        monkeypatch.setenv(GRAPH_URL_ENV, url)
        rt = Runtime(home)  # syncs the graph as it closes: the store's error is swallowed
        rt.close()
