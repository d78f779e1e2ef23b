"""A real ``cradle-kg serve`` process on 127.0.0.1 (a free port) over a known demo home."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.records import Outcome
from tests import demo_template, oneshot

#: the limits of the test server: small, so runaway queries hit them quickly
TIMEOUT_SECONDS = 3.0
MAX_RESULT_BYTES = 1_000_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    home: Path | None
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def sparql(self) -> str:
        return self.url + "/sparql"


#: what ``serve`` says when its port was taken after :func:`free_port` found it free
_PORT_TAKEN = "Address already in use"


def start_server(args: list[str], log: Path, home: Path | None = None, *,
                 preexec_fn: Callable[[], None] | None = None) -> Server:
    """``args`` after the test server's defaults (the last of an option given twice wins);
    ``preexec_fn`` runs in the child before it starts (a resource limit).

    :func:`free_port` closes its socket before the server binds the port: another process
    on the machine (another suite's server) can take it in between, and the server then
    exits saying so. Such a start is tried again on another port (five times)."""
    for attempt in range(5):
        try:
            return _start_server(args, log, home, preexec_fn=preexec_fn)
        except _PortTaken:
            if attempt == 4:
                raise
    raise AssertionError("unreachable")


class _PortTaken(RuntimeError):
    pass


def _start_server(args: list[str], log: Path, home: Path | None, *,
                  preexec_fn: Callable[[], None] | None) -> Server:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    fh = log.open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "cradle_kg", "serve", "--port", str(port), "--workers", "2",
         "--timeout", str(TIMEOUT_SECONDS), "--max-result-bytes", str(MAX_RESULT_BYTES), *args],
        stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=preexec_fn)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            said = log.read_text()
            if f"cannot listen on `127.0.0.1:{port}`" in said and _PORT_TAKEN in said:
                raise _PortTaken(said)
            raise RuntimeError(f"the server exited: {said}")
        try:
            if oneshot.get(url + "/healthz", timeout=2).status_code == 200:
                return Server(url, home, process, log)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"the server did not start: {log.read_text()}")


def stop_server(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(5)


def close_proposal(account: str) -> dict[str, object]:
    return {"id": f"p-close-{account}", "task_id": f"task-close-{account}", "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.close_account", "target": "ledger:" + account,
                       "arguments": {"account": account}}}


@dataclass
class DemoHome:
    path: Path
    waiting: Outcome  # an irreversible close waiting for a human


def make_demo_home(path: Path) -> DemoHome:
    """The demo, plus one close request left pending for the inbox."""
    demo_template.demo_home(path)  # the ledger demo (a copy of the run's): no pack services
    with Runtime(path) as rt:
        waiting = rt.submit(close_proposal("acct-7"))
    assert waiting.approval is not None
    return DemoHome(path, waiting)


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> DemoHome:
    return make_demo_home(tmp_path_factory.mktemp("served") / "home")


@pytest.fixture(scope="module")
def server(demo_home: DemoHome, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    log = tmp_path_factory.mktemp("log") / "serve.log"
    # the origins the module's browser tests come from (CORS is off unless named)
    srv = start_server(["--home", str(demo_home.path), "--cors-origin", "http://yasgui.example",
                        "--cors-origin", "https://example.org"], log, demo_home.path)
    yield srv
    stop_server(srv)
