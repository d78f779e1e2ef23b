"""A remote graph store's or a model server's answer is bounded in time from the request,
its headers included.

Finding (twenty-seventh review, outbound connections): httpx's timeout is per read, so
``SparqlHttpStore`` bounds an answer's body to ``ANSWER_TIMEOUTS`` times ``timeout_s`` (a store
sending a byte at a time would hold the caller for ever), and the model client its body
to its timeout — but both counted from the answer's *headers*. A store (or a model
server, or a man in the middle of plain http) that sends its status line and headers a
byte at a time, each byte within ``timeout_s``, held the caller for as long as it liked:
h11 takes headers up to 16 KiB, a byte every 29 s of the default 30 s timeout is five
days, for one request of ``graph follow``, ``query`` or a workflow's model step. Measured
here: a store with ``timeout_s`` 0.2 (a bound of 2 s) held the watermark read 4.8 s and
then answered it.

Now the deadline counts from the request: every read and write of the exchange, the
connection and the headers included, runs within what is left of it
(``environment_proxies.deadline``, applied by the transport of every client the runtime
builds for a configured URL); past it the call is a typed timeout
(``GraphTimeoutError``, ``ModelError``).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import pytest

from cradle_kg.errors import GraphTimeoutError
from cradle_kg.storage.graph_config import RemoteGraph
from cradle_kg.storage.sparql_http import SparqlHttpStore
from cradle_kg.workflow import ChatMessage, ModelError, ModelRequest, OpenAICompatibleClient

from ..workflow.recorded_server import completion

RESULTS = json.dumps({"head": {"vars": ["v"]}, "results": {"bindings": []}}).encode()
REQUEST = ModelRequest(model="m", messages=(ChatMessage(role="user", content="hi"),),
                       schema_name="T", response_schema={})


@contextmanager
def dripping(media: str, body: bytes, pad: int) -> Iterator[str]:
    """A server on 127.0.0.1 answering every request with its status line and headers a
    byte every 30 ms (``pad`` bytes of a header of its own among them), then ``body``."""
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: " + media.encode() + b"\r\nX-Pad: "
            + b"a" * pad + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(1 << 16)
                for byte in head:
                    if stop.is_set():
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(0.03)
                conn.sendall(body)
            except OSError:
                return  # the client gave up

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        with suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
        listener.close()
        thread.join(timeout=5)


def test_a_store_sending_its_headers_a_byte_at_a_time_times_out() -> None:
    # timeout_s 0.2: the whole answer within 2 s; the headers alone take ~4.8 s
    with dripping("application/sparql-results+json", RESULTS, pad=60) as url:
        store = SparqlHttpStore(RemoteGraph(query=f"{url}/query", update=f"{url}/update",
                                            store=f"{url}/store", timeout_s=0.2))
        try:
            with pytest.raises(GraphTimeoutError):  # before: DID NOT RAISE (answered 0)
                store.projected_seq()
        finally:
            store.close()


def test_a_model_server_sending_its_headers_a_byte_at_a_time_times_out() -> None:
    # timeout 0.2: the whole answer within 0.4 s; the headers alone take ~2.4 s
    body = json.dumps(completion("{}")).encode()
    with dripping("application/json", body, pad=20) as url:
        client = OpenAICompatibleClient(f"{url}/v1", timeout=0.2)
        try:
            with pytest.raises(ModelError) as failed:  # before: DID NOT RAISE
                client.complete(REQUEST)
        finally:
            client.close()
    assert "timed out" in failed.value.message or "deadline" in failed.value.message, \
        failed.value.message
