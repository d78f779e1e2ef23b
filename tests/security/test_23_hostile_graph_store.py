"""A hostile remote graph store (a real HTTP server on 127.0.0.1) against its clients.

Findings:

* ``graph follow`` wrote a failed round's error to the terminal as it was — and the error
  quotes the store's answer: a store (or anything on the path to it) that answers
  ``ESC ] 0 ; … BEL ESC [ 2 J`` retitled and cleared the operator's terminal, or hid
  lines. The line now goes through the same cleaning as every other printed value.
* an answer was read whole into memory however large, and httpx's timeout is per read:
  a store sending a byte every few tenths of a second held ``graph follow``, a query or
  a sync for ever. An answer is now bounded in bytes (``MAX_ANSWER_BYTES``) and in time
  (``ANSWER_TIMEOUTS`` times ``timeout_s`` after its headers): a typed error, nothing applied.

What holds: the credentials of the graph URL are in no line ``graph follow`` prints.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.errors import GraphResponseError, GraphTimeoutError
from cradle_kg.storage import sparql_http
from cradle_kg.storage.graph_config import parse_setting, resolve
from cradle_kg.storage.sparql_http import SparqlHttpStore

from ..followers import follow_a_while
from .sparql_target import serving

ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\u009b2J\u202e".encode()


class _Hostile(BaseHTTPRequestHandler):
    mode = "escapes"

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.mode == "escapes":
            body = b"store failed " + ESCAPES
            self.send_response(500)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.end_headers()  # no length: the body runs until the connection closes
        with contextlib.suppress(OSError):
            for _ in range(200):  # bounded: 200 chunks, the client gives up long before
                self.wfile.write(b" " * (64 * 1024 if self.mode == "huge" else 1))
                self.wfile.flush()
                if self.mode == "drip":
                    time.sleep(0.1)

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, *args: object) -> None:
        return None


@contextlib.contextmanager
def _store(mode: str) -> Iterator[str]:
    with serving(type("H", (_Hostile,), {"mode": mode})) as url:
        yield url


def test_follow_does_not_pass_a_store_s_escapes_or_credentials_to_the_terminal(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home):
        pass
    with _store("escapes") as base:
        url = base.replace("http://", "http://user:hunter2pw@")
        # a few failed rounds: stopped 4 s after its first line (tests/followers.py)
        _, out, err = follow_a_while(
            ["--home", str(home), "--interval", "0.05"],
            {**os.environ, "CRADLE_GRAPH_URL": url, "PYTHONUNBUFFERED": "1"}, after=4)
    text = out + err
    assert b"not projected (retrying)" in out, text
    assert b"store failed" in out
    assert not any(c.encode() in text for c in "\x1b\x07\u009b\u202e"), text
    assert b"hunter2pw" not in text


@pytest.mark.parametrize("mode", ["huge", "drip"])
def test_an_answer_is_bounded_in_bytes_and_in_time(mode: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sparql_http, "MAX_ANSWER_BYTES", 1 << 20)
    monkeypatch.setattr(sparql_http, "ANSWER_TIMEOUTS", 2)
    with _store(mode) as base:
        store = SparqlHttpStore(resolve(parse_setting(base)).model_copy(
            update={"timeout_s": 0.5}))
        outcome: list[BaseException] = []

        def ask() -> None:
            try:
                store.tsv("SELECT ?s WHERE { GRAPH ?g { ?s ?p ?o } }")  # any answer's bound
            except BaseException as exc:
                outcome.append(exc)

        started = time.monotonic()
        worker = threading.Thread(target=ask, daemon=True)
        worker.start()
        worker.join(15)  # unbounded, the drip would take 20 s and the huge answer 12 MiB
        store.close()
        assert not worker.is_alive(), "the answer held the client"
        assert time.monotonic() - started < 5
        expected = GraphResponseError if mode == "huge" else GraphTimeoutError
        assert len(outcome) == 1 and isinstance(outcome[0], expected), outcome
        if mode == "huge":  # refused at the cap, not read whole and then found malformed
            assert "answered more than 1048576 bytes" in str(outcome[0])
