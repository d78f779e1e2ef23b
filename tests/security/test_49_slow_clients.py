"""Clients that never finish a request cannot take the server down.

Finding: uvicorn keeps a connection whose request never ends its headers for as long as
the client likes (its only timeout is for an idle kept-alive connection). From one
unauthenticated client on the same host, 2,500 connections that each sent half a request
took the 1,024 file descriptors of ``cradle-kg serve``'s query workers (a common soft
limit for a service): ``/healthz``, ``/sparql`` and the API were all dropped ("server
disconnected without sending a response") for as long as the connections were held —
and they were held for ever (1,969 of 2,500 still open 8 s later, never answered).
``mcp serve`` and ``mcp proxy`` on HTTP were the same. Now (:mod:`cradle_kg.server.
deadlines`) a request's headers must arrive within ``--header-timeout`` (10 s) of the
connection or of the answer before — else a 408 and the connection is closed — and its
body within 60 s of its headers; and each server lifts its soft limit of open files to
the hard limit at start, so that a held connection costs memory, not one of 1,024 slots.
Found on the way: httptools (uvicorn's parser when installed) has no cap on a request's
line and headers — one header of 80 MB sent within the deadline grew a worker by 140 MB
and kept a core busy; now 64 KiB, then a 431 and the connection is closed (h11 caps them
at 16 KiB itself).

A real ``cradle-kg serve`` started with a soft limit of 256 open files and
``--header-timeout 1``, 600 half-sent requests; and the protocol itself, on both of
uvicorn's HTTP parsers, in a real uvicorn server on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cradle_kg.server.deadlines import request_deadlines
from tests import oneshot

from ..server.conftest import free_port, make_demo_home, start_server, stop_server

HELD = 600
PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"  # the blank line never comes


def _low_files() -> None:
    """The child's soft limit of open files: 256 (its hard limit as the test's)."""
    resource.setrlimit(resource.RLIMIT_NOFILE,
                       (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


@pytest.fixture(scope="module")
def low_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert hard >= 4 * HELD, f"this test needs a hard limit of open files >= {4 * HELD}"
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2 * HELD + 200), hard))
    home = make_demo_home(tmp_path_factory.mktemp("slow") / "home")
    log = tmp_path_factory.mktemp("log") / "serve.log"
    try:
        server = start_server(["--home", str(home.path), "--header-timeout", "1"], log,
                              home.path, preexec_fn=_low_files)
        yield server.url
        stop_server(server)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_half_sent_requests_neither_starve_the_server_nor_stay(low_server: str) -> None:
    port = int(low_server.rsplit(":", 1)[1])
    held: list[socket.socket] = []
    try:
        for _ in range(HELD):
            conn = socket.create_connection(("127.0.0.1", port), timeout=5)
            conn.sendall(PARTIAL)
            held.append(conn)
        started = time.monotonic()
        # the workers still have files to accept and answer with
        assert oneshot.get(low_server + "/healthz", timeout=10).status_code == 200
        got = oneshot.get(low_server + "/sparql", params={"query": "ASK {}"}, timeout=10)
        assert got.status_code == 200 and got.json()["boolean"] is True
        # and the half-sent requests are answered 408 and closed within the timeout
        answers = [_read_to_end(conn, deadline=started + 10) for conn in held]
        assert all(a.startswith(b"HTTP/1.1 408 ") for a in answers), {a[:40] for a in answers}
    finally:
        for conn in held:
            conn.close()


def _read_to_end(conn: socket.socket, *, deadline: float) -> bytes:
    data = b""
    while True:
        conn.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = conn.recv(4096)
        except TimeoutError:
            return data + b"<still open>"
        except ConnectionResetError:
            return data + b"<reset>"
        if not chunk:
            return data
        data += chunk


# --- the protocol itself, on both parsers -------------------------------------------------

async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    while True:  # read the whole body first
        message = await receive()
        if not message.get("more_body"):
            break
    if scope["path"] == "/slow":  # a whole request, answered slowly: not timed
        import asyncio

        await asyncio.sleep(1.2)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def _bases() -> list[Any]:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    bases: list[Any] = [pytest.param(H11Protocol, id="h11")]
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools not installed (it is an optional extra)
        return bases
    return [*bases, pytest.param(HttpToolsProtocol, id="httptools")]


@pytest.fixture(params=_bases())
def tiny_server(request: pytest.FixtureRequest) -> Iterator[int]:
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(
        _app, host="127.0.0.1", port=port, log_level="warning", lifespan="off",
        http=request_deadlines(0.5, 0.5, base=request.param)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    yield port
    server.should_exit = True
    thread.join(10)


def test_headers_too_slow_get_408_and_are_closed(tiny_server: int) -> None:
    with socket.create_connection(("127.0.0.1", tiny_server)) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        answer = _read_to_end(conn, deadline=time.monotonic() + 3)
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer


def test_a_body_too_slow_is_closed(tiny_server: int) -> None:
    with socket.create_connection(("127.0.0.1", tiny_server)) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n1")
        answer = _read_to_end(conn, deadline=time.monotonic() + 3)
    assert answer in (b"", b"<reset>"), answer  # closed, nothing answered


def test_the_next_request_on_a_kept_alive_connection_is_timed_too(tiny_server: int) -> None:
    with socket.create_connection(("127.0.0.1", tiny_server)) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.3)
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # the second never ends
        answer = _read_to_end(conn, deadline=time.monotonic() + 3)
    assert answer.startswith(b"HTTP/1.1 200 ") and b"HTTP/1.1 408 " in answer, answer


def test_requests_in_time_are_served_however_long_the_answer(tiny_server: int) -> None:
    with httpx.Client(timeout=10) as client:
        for _ in range(3):  # kept alive between them
            assert client.get(f"http://127.0.0.1:{tiny_server}/").text == "ok"
            time.sleep(0.3)
        # the answer takes longer than both deadlines: a whole request is not timed
        assert client.post(f"http://127.0.0.1:{tiny_server}/slow", content=b"x" * 100).text \
            == "ok"


def test_a_body_sent_in_time_in_pieces_is_served(tiny_server: int) -> None:
    with socket.create_connection(("127.0.0.1", tiny_server)) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n12")
        time.sleep(0.2)
        conn.sendall(b"34")
        answer = _read_to_end(conn, deadline=time.monotonic() + 0.4)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"ok<still open>"), answer


def test_the_raise_of_open_files(tmp_path: Path) -> None:
    """``raise_open_files`` lifts the soft limit to the hard one (in a child process)."""
    code = ("import resource; from cradle_kg.server.deadlines import raise_open_files; "
            "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE); "
            "print(soft, raise_open_files(), hard)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         preexec_fn=_low_files, check=True).stdout.split()
    soft, raised, hard = (int(x) for x in out)
    assert soft == 256 and raised == hard


def test_headers_past_the_cap_get_431_and_are_closed(tiny_server: int) -> None:
    """httptools has no cap of its own (h11's is 16 KiB): one header of 80 MB sent within
    the deadline grew a query worker by 140 MB. Past 64 KiB: 431, closed."""
    with socket.create_connection(("127.0.0.1", tiny_server)) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ")
        with contextlib.suppress(OSError):  # the server may close while we still send
            for _ in range(64):
                conn.sendall(b"a" * 16384)
        answer = _read_to_end(conn, deadline=time.monotonic() + 3)
    assert answer.startswith((b"HTTP/1.1 431 ", b"HTTP/1.1 400 ")) or answer == b"<reset>", \
        answer[:80]


def test_a_big_body_after_an_early_answer_is_not_taken_for_headers(tiny_server: int) -> None:
    with httpx.Client(timeout=10) as client:
        big = b"x" * (256 * 1024)  # read whole by the app, well past the header cap
        assert client.post(f"http://127.0.0.1:{tiny_server}/", content=big).text == "ok"
        assert client.get(f"http://127.0.0.1:{tiny_server}/").text == "ok"  # kept alive
