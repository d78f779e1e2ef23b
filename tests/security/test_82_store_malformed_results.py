"""A malformed answer of the graph store is a typed error wherever it is read.

Finding: what a store (or anything on the plain-HTTP path to it) answers was checked only
in part:

* SPARQL JSON results holding ``#boolean`` (or ``#dateTime``, ``nodeID://``) were first
  decoded by Python's ``json`` to put Virtuoso's forms back, and JSON nested deeper than
  Python's stack raised ``RecursionError`` — no typed error: ``graph follow`` ended
  (``error: unexpected RecursionError``, exit 2) instead of reporting the round and
  retrying, and ``Runtime.close`` raised it (its graph sync suppresses only typed
  errors), leaving the journal and the home's lease open;
* a SELECT or an ASK answered with no results document (a 204, an HTML page, RDF) was
  read as RDF and printed as an empty graph, exit 0: ``query --sparql 'ASK { … }'`` exits
  1 for false and 0 for true, so a store (or a proxy, or a man in the middle) answering
  ``204 No Content`` made every ASK *true* for the scripts that test it, and a SELECT
  printed nothing;
* solutions are parsed lazily: a row that does not parse (a variable missing from the
  header, an IRI with a space) surfaced where it was read — ``query`` blamed the user's
  query (``error: the query failed: …``).

Now the decoding's ``RecursionError`` leaves the answer to the results parser, a SELECT or
ASK must be answered with SPARQL results, and every row is parsed before the result is
handed on: each is ``graph_bad_response`` naming the store — one ``error:`` line and exit
2 (never an ASK's 0 or 1), a retried round for ``graph follow``, nothing for
``Runtime.close`` to raise.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from cradle_kg import Runtime
from cradle_kg.storage.graph import PROJECTION_VERSION
from cradle_kg.storage.graph_config import GRAPH_URL_ENV

from ..inprocess import run_cli
from .sparql_target import StoreHandler, serving
from .test_80_store_watermark_ahead import _home as home_with

_JSON = "application/sparql-results+json"
#: an array nested past Python's recursion limit, with the word that made it decoded
DEEP = (b'{"head":{"vars":["v"]},"results":{"bindings":[' + b"[" * 20_000 + b"]" * 20_000
        + b']},"x":"http://www.w3.org/2001/XMLSchema#boolean"}')
_INT = "http://www.w3.org/2001/XMLSchema#integer"
Answer = tuple[int, str | None, bytes]


def _rows(rows: list[dict[str, object]], names: tuple[str, ...] = ("v",)) -> bytes:
    return json.dumps({"head": {"vars": list(names)},
                       "results": {"bindings": rows}}).encode()


def _home(path: Path) -> int:
    return home_with(path, 2, "t")  # test_80's: a home of two governed calls


def _store(answer: Callable[[str], Answer]) -> Iterator[str]:
    class Store(StoreHandler):
        def do_POST(self) -> None:
            body = self.body()
            if not self.path.startswith("/query"):
                self.reply(204)
                return
            status, ctype, out = answer(parse_qs(body).get("query", [""])[0])
            self.reply(status, ctype, out)

    with serving(Store) as url:
        yield url


def _at_head(head: int, other: Answer) -> Callable[[str], Answer]:
    """A store projected to ``head`` (watermark, layout, one run graph) that answers
    ``other`` to every other query."""
    def answer(query: str) -> Answer:
        if "projectedSeq" in query:
            value = str(head)
        elif "projectionVersion" in query:  # this code's: a store at the head is read as is
            value = str(PROJECTION_VERSION)
        elif "STRSTARTS" in query:
            return 200, _JSON, _rows([{"v": {"type": "uri", "value":
                                             "https://w3id.org/cradle/run/run%3At"}}])
        else:
            return other
        return 200, _JSON, _rows([{"v": {"type": "literal", "value": value,
                                         "datatype": _INT}}])
    return answer


def _cli(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``cradle-kg ARGS --home HOME`` on the store at ``url``, in this process (its exit
    code and its one line are the point, not the process)."""
    return run_cli(*args, "--home", str(home), env={GRAPH_URL_ENV: url})


def _one_error_line(done: subprocess.CompletedProcess[str], says: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr, done.stderr
    assert says in done.stderr, done.stderr


def test_a_follower_survives_json_nested_past_the_stack(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    home = tmp_path / "home"
    _home(home)
    asked: list[str] = []

    def deep(query: str) -> Answer:
        asked.append(query)
        return 200, _JSON, DEEP

    for url in _store(deep):
        proc = subprocess.Popen(
            [sys.executable, "-m", "cradle_kg", "graph", "follow", "--home", str(home),
             "--interval", "0.05"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, GRAPH_URL_ENV: url})
        try:
            # a second round asked: the first one's failure was reported (a fixed 4 s was
            # too short for the follower's start on a loaded machine)
            deadline = time.monotonic() + 90
            while len(asked) < 2 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            alive = proc.poll() is None
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        assert alive, (out + err).decode()
        assert proc.returncode == 0, err
        assert b"not projected (retrying): the graph store's answer is not SPARQL JSON" \
            in out, out
        assert b"unexpected" not in out + err and b"Traceback" not in err
        monkeypatch.setenv(GRAPH_URL_ENV, url)
        rt = Runtime(home)  # syncs the graph as it closes: a store's error is swallowed
        rt.close()


@pytest.mark.parametrize("answer", [
    (200, _JSON, _rows([{"v": {"type": "uri", "value": "http://a"},
                         "w": {"type": "uri", "value": "http://b"}}])),  # w: not in head
    (200, _JSON, _rows([{"v": {"type": "uri", "value": "not an iri"}}])),
], ids=["undeclared-variable", "bad-iri"])
def test_a_row_that_does_not_parse_is_a_typed_error(tmp_path: Path, answer: Answer) -> None:
    home = tmp_path / "home"
    head = _home(home)
    for url in _store(_at_head(head, answer)):
        _one_error_line(_cli(home, url, "query", "--sparql",
                             "SELECT ?v WHERE { ?v ?p ?o }", "--format", "json"),
                        "error: the graph store's answer is not SPARQL JSON results")
        _one_error_line(_cli(home, url, "validate", "--all"),
                        "error: the graph store's answer is not SPARQL JSON results")


@pytest.mark.parametrize("answer", [(204, None, b""), (200, "text/html", b""),
                                    (200, "application/n-triples", b"")],
                         ids=["204", "html", "rdf"])
def test_a_select_answered_without_results_is_no_empty_result(tmp_path: Path,
                                                               answer: Answer) -> None:
    home = tmp_path / "home"
    head = _home(home)
    for url in _store(_at_head(head, answer)):
        for query in ("SELECT ?v WHERE { ?v ?p ?o }", "ASK { ?s ?p ?o }"):
            _one_error_line(_cli(home, url, "query", "--sparql", query),
                            "not SPARQL results")
