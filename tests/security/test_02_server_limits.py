"""Item 2, the server's share: request bodies are capped before authentication and before
parsing (413), and a deeply nested query is a 400 that kills no worker and starves no one.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests import oneshot

from .sparql_target import Server, serve_data, stop_server

BODY_CAP = 65_536


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = serve_data(tmp_path_factory.mktemp("limits"), "--max-body-bytes", str(BODY_CAP))
    yield srv
    stop_server(srv)


def test_a_body_over_the_cap_is_413_before_authentication(server: Server) -> None:
    big = b"{" + b" " * (BODY_CAP + 10) + b"}"
    for path in ("/api/proposals", "/sparql", "/api/approvals/x/approve"):
        r = oneshot.post(server.url + path, content=big,
                       headers={"content-type": "application/json"})
        assert r.status_code == 413, (path, r.status_code, r.text)
        assert "byte cap" in r.text


def test_a_chunked_body_over_the_cap_is_413(server: Server) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(64):
            yield b"x" * 4096  # 256 KiB, no content-length

    r = oneshot.post(server.sparql, content=chunks(),
                   headers={"content-type": "application/sparql-query"})
    assert r.status_code == 413


def test_a_declared_length_over_the_cap_is_413_without_reading_the_body(server: Server) -> None:
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(b"POST /api/proposals HTTP/1.1\r\nhost: x\r\n"
                     b"content-type: application/json\r\n"
                     b"content-length: " + str(BODY_CAP * 4).encode() + b"\r\n\r\n{}")
        answer = conn.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413"), answer


@pytest.mark.parametrize("query", [
    "SELECT * WHERE " + "{" * 20_000 + "}" * 20_000,
    "SELECT * WHERE { FILTER(" + "(" * 20_000 + "1" + ")" * 20_000 + ") }",
    "SELECT * WHERE { ?s <p:a> " + "[ <p:a> " * 5_000 + "1" + " ]" * 5_000 + " }",
    "SELECT * WHERE { ?s <p:a> " + "(" * 20_000 + "1" + ")" * 20_000 + " }",
])
def test_a_deep_or_huge_query_is_400_and_the_workers_live(server: Server, query: str) -> None:
    before = oneshot.get(server.url + "/healthz").json()["workers_replaced"]
    r = oneshot.post(server.sparql, content=query.encode(), timeout=60,
                   headers={"content-type": "application/sparql-query"})
    assert r.status_code == 400, r.text
    assert oneshot.get(server.url + "/healthz").json()["workers_replaced"] == before


def test_a_long_flat_chain_is_stopped_never_a_crash(server: Server) -> None:
    query = "SELECT * WHERE { FILTER(" + "+".join(["1"] * 25_000) + ") }"
    r = oneshot.post(server.sparql, content=query.encode(), timeout=60,
                   headers={"content-type": "application/sparql-query"})
    # no nesting to refuse: it runs on the workers' deep stack, within the time limit
    assert r.status_code in (200, 400, 503), r.text


def test_deep_queries_from_two_clients_do_not_starve_a_normal_one(server: Server) -> None:
    deep = "SELECT * WHERE " + "{" * 20_000 + "}" * 20_000
    stop = threading.Event()
    statuses: list[int] = []
    # the normal queries start once both clients are sending, and each client sends at
    # least one deep query (before, under load, the five normal queries could end before
    # a client's thread ran at all: no deep query sent, nothing checked)
    sending = threading.Barrier(3)

    def hammer() -> None:
        with httpx.Client(timeout=60) as http:
            sending.wait(60)
            sent = 0
            while not sent or not stop.is_set():
                statuses.append(http.post(server.sparql, content=deep.encode(), headers={
                    "content-type": "application/sparql-query"}).status_code)
                sent += 1

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        sending.wait(60)
        for _ in range(5):
            r = oneshot.get(server.sparql, timeout=60,
                          params={"query": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"})
            assert r.status_code == 200, r.text
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert len(statuses) >= 2 and set(statuses) == {400}, statuses


@pytest.mark.slow
def test_every_query_thread_of_a_worker_has_the_deep_stack(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """One worker runs several queries at once, each on a thread of its own: long flat
    chains sent at once reach every one of those threads, and none overflows its stack."""
    srv = serve_data(tmp_path_factory.mktemp("one-worker"), "--workers", "1")
    try:
        query = "SELECT * WHERE { FILTER(" + "+".join(["1"] * 25_000) + ") }"
        statuses: list[int] = []

        def send() -> None:
            r = oneshot.post(srv.sparql, content=query.encode(), timeout=60,
                           headers={"content-type": "application/sparql-query"})
            statuses.append(r.status_code)

        threads = [threading.Thread(target=send) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        # a worker that overflowed would drop its connections: no status at all
        assert len(statuses) == 8 and set(statuses) <= {200, 400, 503}, statuses
        assert oneshot.get(srv.sparql, params={"query": "ASK {}"}).status_code == 200
    finally:
        stop_server(srv)


#: a cross product no engine finishes within the test server's timeout
RUNAWAY = ("SELECT (COUNT(*) AS ?n) WHERE { "
           + " ".join(f"VALUES ?v{i} {{ {' '.join(str(n) for n in range(200))} }}"
                      for i in range(5)) + " }")


def test_a_worker_replaced_after_a_timeout_leaves_the_port_open(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """With one worker, the query that times out ends it; while its replacement starts,
    new connections wait on the slot's socket (the server's, not the worker's) — none is
    refused. A client knocks all along; the runaway's 503 comes, the worker is replaced,
    and not one knock was refused."""
    srv = serve_data(tmp_path_factory.mktemp("replaced"), "--workers", "1")
    host, port = srv.url.rsplit("//", 1)[1].split(":")
    knocks = {"made": 0, "refused": 0}
    stop = threading.Event()

    def knock() -> None:
        while not stop.is_set():
            try:
                socket.create_connection((host, int(port)), timeout=10).close()
            except ConnectionRefusedError:
                knocks["refused"] += 1
            knocks["made"] += 1

    knocker = threading.Thread(target=knock)
    knocker.start()
    try:
        res = oneshot.post(srv.sparql, data={"query": RUNAWAY}, timeout=120)
        assert res.status_code == 503, res.text
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the replacement is up and answering
            health = oneshot.get(srv.url + "/healthz", timeout=10).json()
            if health["workers_replaced"] >= 1 and health["workers_ready"] == 1:
                break
            time.sleep(0.05)
        assert health["workers_replaced"] >= 1 and health["workers_ready"] == 1, health
        assert oneshot.get(srv.sparql, params={"query": "ASK {}"}, timeout=30).status_code == 200
    finally:
        stop.set()
        knocker.join(30)
        stop_server(srv)
    assert knocks["made"] > 100 and knocks["refused"] == 0, knocks
