"""A query worker that ends after a runaway query does not take its other clients with it.

Found by the endpoint bench (3 of 11 runs) and reproduced here: a worker whose query ran
past the deadline answers 503 on that query's connection and ends itself — while other
clients still held idle keep-alive connections to it. A client that then sent its next
query on such a connection (a pooled connection that showed no end yet: httpx, like
every pooling client, reuses it) got "connection reset by peer" for a query that had
nothing to do with the runaway: on the code before, 2 to 4 of this test's 4 rounds in
each of 3 runs. Before it writes any 503 the worker now stops accepting (its copy of the
slot's listening socket closed on its event loop: a client that reconnected at once was
otherwise accepted by the ending worker and dropped too) and shuts its other clients'
connections down (:func:`cradle_kg.server.front.close_connections`), so they show their
end at once; the client opens a new connection, which the slot's listening socket queues
for the replacement worker.

A real ``cradle-kg serve`` with one query worker and a 1 s limit, a real runaway query,
and three keep-alive clients that each send their next query the moment the runaway's
503 is back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import oneshot

from .conftest import DemoHome, Server, make_demo_home, start_server, stop_server
from .test_endpoint import RUNAWAY

ROUNDS = 4
CLIENTS = 3


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home: DemoHome = make_demo_home(tmp_path_factory.mktemp("ending") / "home")
    log = tmp_path_factory.mktemp("log") / "serve.log"
    # the last of an option given twice wins: one worker (every connection is its), 1 s
    srv = start_server(["--home", str(home.path), "--workers", "1", "--timeout", "1"], log,
                       home.path)
    yield srv
    stop_server(srv)


@pytest.mark.slow
def test_idle_keep_alive_clients_survive_a_runaway(one_worker: Server) -> None:
    failures: list[str] = []
    for round_ in range(ROUNDS):
        clients = [httpx.Client(timeout=30) for _ in range(CLIENTS)]
        try:
            for client in clients:  # each holds a keep-alive connection to the worker
                assert client.post(one_worker.sparql, data={"query": "ASK {}"}).json() == {
                    "head": {}, "boolean": True}
            runaway = oneshot.post(one_worker.sparql, data={"query": RUNAWAY}, timeout=30)
            assert runaway.status_code == 503
            for n, client in enumerate(clients):
                try:
                    res = client.post(one_worker.sparql, data={"query": "ASK {}"})
                    assert res.status_code == 200, res.text
                except httpx.TransportError as exc:
                    failures.append(f"round {round_}, client {n}: {type(exc).__name__}: {exc}")
        finally:
            for client in clients:
                client.close()
    assert not failures, failures
    assert oneshot.get(one_worker.url + "/healthz").json()["workers_replaced"] >= ROUNDS


def test_only_the_servers_client_connections_are_shut(tmp_path: Path) -> None:
    """What ``close_connections`` shuts: TCP connections on the given port, not the
    listening socket, nor sockets of other ports or families, nor the ones kept."""
    import socket

    from cradle_kg.server.front import close_connections

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    other = socket.create_server(("127.0.0.1", 0))
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    served = [listener.accept()[0] for _ in range(2)]
    outsider = socket.create_connection(other.getsockname()[:2])
    outsider_served = other.accept()[0]
    left, right = socket.socketpair()
    sockets = [listener, other, *clients, *served, outsider, outsider_served, left, right]
    try:
        close_connections(port, keep={served[1].fileno()})
        clients[0].settimeout(5)
        assert clients[0].recv(1) == b""  # shut down: its end shows at once
        for kept in (clients[1], outsider, left):
            kept.setblocking(False)
            with pytest.raises(BlockingIOError):  # nothing arrived, no end either
                kept.recv(1)
        late = socket.create_connection(("127.0.0.1", port))  # still listening
        sockets.append(late)
        sockets.append(listener.accept()[0])
    finally:
        for s in sockets:
            s.close()


def test_a_client_querying_beside_a_runaway_gets_an_answer(one_worker: Server) -> None:
    """A query runs on the worker's event loop itself only when it is the worker's only
    request from its only client (no hand-off to a query thread). A second client with a
    keep-alive connection that queries while a runaway runs is answered — 200 on a query
    thread beside it, or 503 "send it again" — never dropped with the connection (when
    its request is still unread as the worker ends, the 503 is written first)."""
    import threading
    import time

    got: list[httpx.Response] = []
    with httpx.Client(timeout=30) as client:  # a keep-alive connection to the worker
        assert client.post(one_worker.sparql, data={"query": "ASK {}"}).status_code == 200
        runaway = threading.Thread(target=lambda: got.append(
            oneshot.post(one_worker.sparql, data={"query": RUNAWAY}, timeout=30)))
        runaway.start()
        time.sleep(0.3)  # the runaway is running
        res = client.post(one_worker.sparql, data={"query": "ASK {}"})
        runaway.join()
    assert got[0].status_code == 503
    assert res.status_code == 200 or "send the query again" in res.text, res.text
