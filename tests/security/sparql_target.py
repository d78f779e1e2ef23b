"""Shared by the server's attack tests: a loopback listener that counts connections, and a
real ``cradle-kg serve`` over a small Turtle file (helpers, not fixtures: no conftest)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ..server.conftest import Server, start_server, stop_server

DATA = """@prefix ex: <http://example.org/> .
ex:a ex:p ex:b . ex:b ex:p ex:c . ex:c ex:label "c" .
"""
#: what the listener answers: a SPARQL JSON result that would show up in a leaked body
LEAK = b'{"head":{"vars":["x"]},"results":{"bindings":[{"x":{"type":"literal","value":"LEAKED"}}]}}'


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` answering HTTP on a loopback port (a thread per request) for the block:
    its base URL. The hostile stores of ``test_23`` and ``test_80`` … ``test_83``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def recording(body: bytes, media: str) -> Iterator[tuple[str, list[str]]]:
    """A server answering ``body`` as ``media`` to every GET, noting each request's path:
    its base URL and the paths, for the block (``test_64``'s JSON-LD contexts,
    ``test_347``'s ontology imports)."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", media)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    with serving(Handler) as url:
        yield url, seen


@contextlib.contextmanager
def answering(body: bytes, media: str, *, encoding: str | None = None,
              seen: list[str] | None = None, noting: str = "Accept-Encoding",
              with_line: bool = False) -> Iterator[str]:
    """A store answering ``body`` as ``media`` (in ``encoding``) to every GET, POST, PUT
    and CONNECT, noting each request's ``noting`` header (after its request line when
    ``with_line``) in ``seen``: its base URL for the block (``test_83``, ``test_345``;
    ``test_372``'s credentials; ``test_401``'s proxy, which a request reaches as
    ``GET http://host:port/path``)."""
    class Store(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if seen is not None:
                noted = self.headers.get(noting, "")
                seen.append(f"{self.requestline} {noted}" if with_line else noted)
            self.send_response(200)
            self.send_header("Content-Type", media)
            if encoding:
                self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_CONNECT = _answer

        def log_message(self, *args: object) -> None:
            return None

    with serving(Store) as url:
        yield url


def in_child(code: str, *args: str) -> dict[str, object]:
    """The JSON object the Python ``code`` prints, run in a child with ``args`` (a
    client measured apart from the test's own memory: ``test_83``, ``test_345``)."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout)
    return found


class StoreHandler(BaseHTTPRequestHandler):
    """A hand-written store's base: a quiet log, 404 to a GET, :meth:`reply` to answer."""

    def body(self) -> str:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()

    def reply(self, status: int, content_type: str | None = None, out: bytes = b"") -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        if status != 204:
            self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if out:
            self.wfile.write(out)

    def do_GET(self) -> None:
        self.reply(404)

    def log_message(self, *args: object) -> None:
        return None


class Listener:
    """A TCP listener on 127.0.0.1 that counts every connection and answers like SPARQL."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.connections = 0
        self._lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            try:
                conn.settimeout(2)
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/sparql-results+json"
                             b"\r\ncontent-length: " + str(len(LEAK)).encode() + b"\r\n"
                             b"connection: close\r\n\r\n" + LEAK)
            except OSError:
                pass
            finally:
                conn.close()

    def close(self) -> None:
        self._stop = True
        self.sock.close()


def serve_data(tmp: Path, *args: str) -> Server:
    data = tmp / "data.ttl"
    data.write_text(DATA, encoding="utf-8")
    return start_server([str(data), *args], tmp / "serve.log")


__all__ = ["LEAK", "Listener", "Server", "answering", "in_child", "serve_data", "stop_server"]
