"""A real ``cradle-kg mcp serve --transport streamable-http`` on 127.0.0.1, two agents with a
token each, and a raw JSON-RPC client (httpx) for the attacks of ``test_14``."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, demo_config, prepare_home
from cradle_kg.home import Home
from cradle_kg.records import Agent, Permission
from cradle_kg.server.auth import issue_agent_token
from cradle_kg.storage.opening import home_journal_target, open_journal

from ..server.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
MALLORY = "agent:mallory"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "0"}}


def two_agent_home(root: Path) -> Path:
    """The demo home with a second agent that holds the same grants as the first."""
    prepare_home(root)
    base = demo_config()
    save_config(root / "config.json", base.model_copy(update={
        "agents": (*base.agents, Agent(id=MALLORY, role="assistant", permitted_scopes=(
            "ledger:read", "ledger:write", "ledger:admin"))),
        "permissions": (*base.permissions, Permission(
            subject=MALLORY, action_type="demo.ledger.*", resource_selector="ledger:*"))}))
    return root


def two_agent_fixtures() -> tuple[Any, Any]:
    """The fixtures ``home`` (:func:`two_agent_home` in the test's ``tmp_path``) and ``rt``
    (a runtime on it) for a module that overrides the root conftest's:
    ``home, rt = two_agent_fixtures()``."""
    import pytest

    from cradle_kg import Runtime

    @pytest.fixture
    def home(tmp_path: Path) -> Path:
        return two_agent_home(tmp_path / "home")

    @pytest.fixture
    def rt(home: Path) -> Iterator[Runtime]:
        with Runtime(home) as runtime:
            yield runtime

    return home, rt


def declare_agent(home: Path, agent: str) -> None:
    """The operator adds ``agent`` to the home's ``config.json``, with the demo ledger's
    read and write grants."""
    base = load_config(home / "config.json")
    save_config(home / "config.json", base.model_copy(update={
        "agents": (*base.agents, Agent(id=agent, role="assistant",
                                       permitted_scopes=("ledger:read", "ledger:write"))),
        "permissions": (*base.permissions, Permission(
            subject=agent, action_type="demo.ledger.*", resource_selector="ledger:*"))}))


def token_for(home: Path, agent: str, *, host: bool = False) -> str:
    """An agent's token; ``host``: the host application's token for it (its calls may
    carry ``cradle-kg/facts`` and ``cradle-kg/input``)."""
    return issue_agent_token(Home(home), load_config(home / "config.json"), agent, host=host)


@dataclass
class Served:
    url: str
    home: Path
    proc: subprocess.Popen[bytes]
    log: Path
    #: the journal the server was started on (a module-wide fixture's backend, whatever the
    #: test reading it later runs on: ``--journal-backend postgresql``)
    journal: str = ""
    tokens: dict[str, str] = field(default_factory=dict)

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")

    def events(self) -> list[Any]:
        with open_journal(self.journal or home_journal_target(self.home)) as journal:
            return list(journal.events())


def serve(home: Path, *extra: str, verb: str = "serve", tail: Sequence[str] = ()
          ) -> Iterator[Served]:
    """Start the server (127.0.0.1 only; ``extra``: more options; ``verb``: ``proxy`` for
    ``mcp proxy``, its upstream in ``tail``); yield it; stop it."""
    port = free_port()
    log = home.parent / f"{home.name}.stderr"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cradle_kg", "mcp", verb, "--home", str(home),
             "--transport", "streamable-http", "--host", "127.0.0.1", "--port", str(port),
             *extra, *tail],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
    served = Served(f"http://127.0.0.1:{port}/mcp", home, proc, log,
                    journal=home_journal_target(home))
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, served.stderr()
            assert time.monotonic() < deadline, "the server did not start in 60 s"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield served
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def half_sent(served: Served, method: str, framing: str, token: str) -> bytes:
    """The answer to a ``method`` request whose body is declared (``framing``: its
    ``Content-Length`` or ``Transfer-Encoding`` header) and none of it sent: what came within
    20 s, b"" while the server waits for the body. (Nothing of the body is sent: a server
    that answers at once and closes with sent bytes unread resets the connection, and the
    reset can overtake its answer.)"""
    port = int(served.url.split(":")[2].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall((f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                      f"Authorization: Bearer {token}\r\n"
                      "Accept: application/json, text/event-stream\r\n"
                      f"Content-Type: application/json\r\n{framing}\r\n\r\n").encode())
        answer = b""
        try:
            while chunk := conn.recv(4096):  # until the server closes the connection
                answer += chunk
        except TimeoutError:
            pass
        return answer


def waiting_close(home: Path) -> tuple[str, int]:
    """The agent asks to close `acct-9` in ``home``: the approval that now waits, and how
    many events the journal holds then."""
    from cradle_kg import Runtime

    close = {"id": "p-close", "task_id": "t", "run_id": "run:alice", "agent_id": AGENT,
             "action": {"action_type": "demo.ledger.close_account",
                        "target": "ledger:acct-9", "arguments": {"account": "acct-9"}}}
    with Runtime(home) as rt:
        waiting = rt.submit(close)
        assert waiting.approval is not None
        return waiting.approval.id, sum(1 for _ in rt.journal.events())


def fresh(tmp: Path, name: str) -> Path:
    home = tmp / name
    shutil.rmtree(home, ignore_errors=True)
    return two_agent_home(home)


def answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a response (plain JSON, or the last SSE ``data:``)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines()
                if line.startswith("data:") and line[5:].strip()]
        return dict(json.loads(data[-1]))
    return dict(response.json())


class Client:
    """One MCP session over raw HTTP, as one token."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=30)
        self.headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
        opened = self.http.post(url, headers=self.headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
        assert opened.status_code == 200, opened.text
        self.headers = {**self.headers, "mcp-session-id": opened.headers["mcp-session-id"],
                        "mcp-protocol-version": "2025-06-18"}
        self.post_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.ident = 1

    def close(self) -> None:
        self.http.close()

    def post_json(self, body: Any, **headers: str) -> httpx.Response:
        return self.http.post(self.url, headers={**self.headers, **headers}, json=body)

    def post_raw(self, body: bytes) -> httpx.Response:
        return self.http.post(self.url, headers=self.headers, content=body)

    def call(self, tool: str, arguments: Any, meta: dict[str, Any] | None = None
             ) -> dict[str, Any]:
        self.ident += 1
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if meta is not None:
            params["_meta"] = meta
        return answer(self.post_json({"jsonrpc": "2.0", "id": self.ident,
                                      "method": "tools/call", "params": params}))

    def alive(self) -> bool:
        self.ident += 1
        listed = answer(self.post_json({"jsonrpc": "2.0", "id": self.ident,
                                        "method": "tools/list"}))
        return bool(listed.get("result", {}).get("tools"))


__all__ = ["AGENT", "MALLORY", "Client", "Served", "answer", "fresh", "half_sent", "serve",
           "token_for"]


def serving_waits(tmp: Path, wait: str, agent: str) -> Iterator[Served]:
    """A fresh home under ``tmp`` served with ``--approval-wait wait``, ``agent``'s token in
    its ``tokens`` (a fixture's body: ``yield from serving_waits(...)``)."""
    home = fresh(tmp, "home")
    for running in serve(home, "--approval-wait", wait):
        running.tokens = {agent: token_for(home, agent)}
        yield running
