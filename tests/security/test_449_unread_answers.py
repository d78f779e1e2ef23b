"""An answer a client does not read is not held for ever, and unread answers are bounded.

Finding (twenty-fourth review): the deadlines of ``serve``'s query workers time a request
until its answer is written, and the answer not at all ("a whole request being answered
is not timed"). A query's answer is written to the connection at once, up to
``--max-result-bytes`` (50 MB), and what the client's socket does not take waits in the
worker's memory. A client that sends a query and never reads held it there for as long
as it kept the connection open: ten connections each asking for a 32 MB answer (one
``SELECT`` of a string doubled by ``CONCAT``) grew the two workers by ~460 MB for as long
as the client liked, and the first could still read its whole answer 20 s later with
``--header-timeout 2``. Each request was within every cap; the number a client could
leave unread was not bounded at all (as request bodies are: ``test_50``).

Now (``server/deadlines.py``, ``server/front.py``): an answer must be taken at 64 KiB a
second at least, looked at every ``--header-timeout``; a connection whose answer falls
behind is aborted and its bytes dropped (``serve``, ``mcp serve`` and ``mcp proxy`` over
HTTP alike). And a query worker whose clients have left more than four results' worth
(four times ``--max-result-bytes``) unread answers the next query 503 with ``Retry-After: 1``
until they read or are cut.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from ..server.conftest import Server, start_server, stop_server
from .homes import opened_demo_home

#: the servers' result cap: room for the 16 MiB answer
RESULT_CAP = 20_000_000


def big_answer() -> bytes:
    """A ``/sparql`` request whose answer is ~16 MiB of JSON (a string doubled 20 times)."""
    binds = ['BIND("xxxxxxxxxxxxxxxx" AS ?v0)'] + [
        f"BIND(CONCAT(?v{i}, ?v{i}) AS ?v{i + 1})" for i in range(20)]
    query = f"SELECT ?v20 WHERE {{ {' '.join(binds)} }}".encode()
    return (b"POST /sparql HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            b"content-type: application/sparql-query\r\n"
            b"accept: application/sparql-results+json\r\n"
            b"content-length: %d\r\n\r\n" % len(query)) + query


def unread(server: Server) -> socket.socket:
    """A connection that asked for the big answer and reads nothing (a small window)."""
    host, port = server.url.removeprefix("http://").split(":")
    conn = socket.socket()
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    conn.connect((host, int(port)))
    conn.sendall(big_answer())
    return conn


def read_all(conn: socket.socket) -> tuple[bytes, int]:
    """The answer's head and how many bytes of the answer arrived before its end."""
    conn.settimeout(30)
    data = bytearray()
    try:
        while True:
            chunk = conn.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    finally:
        conn.close()
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    return head, len(body)


def content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise AssertionError(head[:300])


def status_of(conn: socket.socket) -> bytes:
    """The status line of the answer on ``conn``, once it came (peeked: nothing taken)."""
    conn.settimeout(60)
    data = b""
    while b"\r\n" not in data:
        data = conn.recv(64, socket.MSG_PEEK)
        if not data:
            break
    return data.split(b"\r\n")[0]


def _serve(factory: pytest.TempPathFactory, name: str, *args: str) -> Iterator[Server]:
    home = opened_demo_home(factory, name)
    srv = start_server(["--home", str(home), "--max-result-bytes", str(RESULT_CAP), *args],
                       factory.mktemp("l" + name) / "s.log", home)
    yield srv
    stop_server(srv)


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose clients have 1 s to send their headers (and to take answers)."""
    yield from _serve(tmp_path_factory, "t449q", "--header-timeout", "1")


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _serve(tmp_path_factory, "t449w", "--workers", "1")


def test_an_answer_not_taken_is_dropped(quick: Server) -> None:
    conn = unread(quick)
    time.sleep(4)  # four of the server's deadlines with nothing taken
    head, got = read_all(conn)
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    # before: the whole answer (and a 408 after it), held for the client all that time
    assert got < content_length(head), (got, content_length(head))


def test_an_answer_behind_another_request_is_dropped(quick: Server) -> None:
    """A second request sent after the query (a page's file, passed on to the app) waits
    behind the unread answer; while it did, the answer was not looked at (first fix)."""
    host, port = quick.url.removeprefix("http://").split(":")
    conn = socket.socket()
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    conn.connect((host, int(port)))
    conn.sendall(big_answer() + b"GET /static/app.js HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
    time.sleep(4)
    head, got = read_all(conn)
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    assert got < content_length(head), (got, content_length(head))


def test_an_answer_taken_is_whole(quick: Server) -> None:
    conn = unread(quick)
    head, got = read_all(conn)  # read at once: the answer arrives whole
    assert head.startswith(b"HTTP/1.1 200"), head[:200]
    assert got >= content_length(head)  # (then the 408 of a connection idle past 1 s)


def test_unread_answers_are_bounded(one_worker: Server) -> None:
    held: list[socket.socket] = []
    statuses = []
    for _ in range(12):  # one after the other: each answer written before the next query
        held.append(unread(one_worker))
        statuses.append(status_of(held[-1]))
    for conn in held:
        conn.close()
    # before: 12 answers of 16 MiB held for clients that read none (~190 MB)
    assert statuses[:4] == [b"HTTP/1.1 200 OK"] * 4, statuses
    assert statuses[-1] == b"HTTP/1.1 503 Service Unavailable", statuses
