"""``/healthz`` tells a caller the graph's readers do not admit that the server is alive.

Finding (eleventh attack review): ``serve --graph-readers approvers|tokens`` closes the
provenance graph to requests without a token of the home (``/sparql``, the named queries:
401). ``/healthz`` answers anyone — as a load balancer's probe needs — but said more than
that the server lives: the graph's size (``triples``), the generation the workers are on
(``generation-N``: its number counts the journal's moves the server published) and, when
the background compaction failed, its error's text, which names the server's private
work folder (``[Errno 28] No space left on device: '/tmp/cradle-serve-…/generation-3'``:
the folder holding the app's socket and a full copy of the closed graph). Anyone reaching
the port read how large the closed graph was and how it moved, and where its copy lies.

Now, with the graph closed, a caller the readers do not admit is told the liveness only —
the mode, the workers ready and in all, the network sandbox, the compaction's state — and
a reader (the token ``/sparql`` takes) the whole answer, as an open graph's callers are.
The compaction's error is said by its kind (``failed: OSError``); its text goes to the
server's log, never to ``/healthz``.

The app shell's real ``/healthz`` over ASGI, in front of a real query front (not started:
no worker is needed to ask its health) on a demo home; the compaction's failure is the
store's own ``compact`` raising as a full disk does.
"""

from __future__ import annotations

import asyncio
import errno
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.server import supervisor
from cradle_kg.server.dataset import PrivateStore
from cradle_kg.server.front import FrontConfig
from cradle_kg.server.launch import ServerSettings, graph_readers
from cradle_kg.server.shell import AppShell
from cradle_kg.server.supervisor import QueryFront
from cradle_kg.server.worker import Limits
from tests.security.homes import opened_demo_home

WHERE = "/tmp/cradle-serve-k3j2x9/generation-3"


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return opened_demo_home(tmp_path_factory, "healthz-closed", embedded=True)


def _health(shell: AppShell, token: str | None) -> dict[str, Any]:
    sent: list[dict[str, Any]] = []
    headers = [(b"host", b"127.0.0.1")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {"type": "http", "method": "GET", "path": "/healthz", "headers": headers,
             "query_string": b"", "http_version": "1.1", "scheme": "http"}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(shell(scope, receive, send))
    assert sent[0]["status"] == 200
    body = b"".join(m.get("body", b"") for m in sent[1:])
    assert WHERE.encode() not in body  # the error's text: never
    return dict(json.loads(body))


@pytest.mark.parametrize("readers", ["approvers", "tokens"])
def test_healthz_tells_an_outsider_only_that_the_server_lives(
        home: Path, private: PrivateStore, tmp_path: Path, readers: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = ServerSettings(home=home, graph_readers=readers)  # type: ignore[arg-type]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = FrontConfig(limits=Limits(), timeout=60.0, app_socket=str(tmp_path / "app"),
                         max_body_bytes=1 << 20, follows=True,
                         readers=graph_readers(settings))
    front = QueryFront(private, config, sock, workdir=tmp_path / "work", size=1)

    def full_disk() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", WHERE)

    monkeypatch.setattr(supervisor, "READY_WAIT_SECONDS", 0.0)
    monkeypatch.setattr(private, "compact", full_disk)
    front._compact()  # the server's background compaction, failing
    private._count_quads()  # the size known (counted in the background at start)
    try:
        shell = AppShell(settings, front)
        outsider = _health(shell, None)
        # before: `triples`, `generation` and the error's text to anyone
        assert set(outsider) == {"mode", "workers_ready", "workers", "network_sandboxed",
                                 "compaction"}, outsider
        assert outsider["compaction"] == "failed: OSError"
        assert set(_health(shell, "not-a-token")) == set(outsider)
        reader = _health(shell, DEMO_TOKENS[APPROVER])
        assert reader["triples"] >= 0 and reader["generation"].startswith("generation-")
        assert reader["compaction"] == "failed: OSError"
    finally:
        sock.close()
