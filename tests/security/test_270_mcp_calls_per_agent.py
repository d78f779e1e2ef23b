"""One agent's slow calls do not hold up the other agents of an MCP gateway.

Finding: the gateway runs each ``tools/call`` on a worker thread, from the pool every
call of the process shares (anyio's default: 40 threads at once). A tool that takes its
time — an upstream's report, a search, anything the proxy waits on for up to
``UPSTREAM_TIMEOUT`` — held a thread for all of it, and nothing bounded how many one
agent held: ``agent:mallory``, with its own token, sent 45 calls of such a tool at once,
and another agent's read, which answers in 50 ms, waited 57 s, until mallory's calls
timed out (with 3 of mallory's calls: 51 ms). Now each agent's calls run on threads of
their own, 8 at once (``CALLS_PER_AGENT``): its next call waits for one of its own, and
no other agent waits on it.

A real ``cradle-kg mcp proxy --transport streamable-http`` before a real upstream on
127.0.0.1 (``http_upstream.py``: ``stall`` answers nothing until the proxy gives up,
``fine`` answers at once), two agents with a token each.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cradle_kg.config import load_config, save_config
from cradle_kg.records import Permission
from tests.conftest import TEST_POLICY

from .mcp_http import AGENT, MALLORY, Client, Served, fresh, serve, token_for
from .test_43_upstream_http import CONTRACTS, hostile_upstream

SLOW_CALLS = 45


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[Served]:
    home = fresh(tmp_path, "home")
    (home / "policies" / "test.cedar").write_text(TEST_POLICY)
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"permissions": (
        *config.permissions, *(Permission(subject=a, action_type="test.*",
                                          resource_selector="test:*")
                               for a in (AGENT, MALLORY)))}))
    (tmp_path / "contracts.yaml").write_text(CONTRACTS)
    for url in hostile_upstream(tmp_path):
        yield from serve(home, "--contracts", str(tmp_path / "contracts.yaml"), "--prefix",
                         "test.up.", verb="proxy", tail=("--upstream", url))


def _status(client: Client, tool: str) -> str:
    return str(client.call(tool, {})["result"]["_meta"]["cradle-kg/status"])


def test_an_agent_s_slow_calls_leave_the_others_served(proxy: Served) -> None:
    agent = Client(proxy.url, token_for(proxy.home, AGENT))
    mallory = Client(proxy.url, token_for(proxy.home, MALLORY))
    assert _status(agent, "test.up.fine") == "executed"
    started = threading.Barrier(SLOW_CALLS + 1)
    ended: list[bool] = []

    def slow() -> None:
        started.wait()
        # answered when the proxy gives up (60 s), or not: the proxy stopped at the end
        with contextlib.suppress(httpx.HTTPError, IndexError, ValueError):
            mallory.call("test.up.stall", {})
        ended.append(True)

    callers = [threading.Thread(target=slow, daemon=True) for _ in range(SLOW_CALLS)]
    for caller in callers:
        caller.start()
    started.wait()
    time.sleep(3)  # mallory's calls reach the proxy (a read-only call journals at its end)
    assert _status(agent, "test.up.fine") == "executed"
    # answered while all of mallory's calls still wait on the upstream; before: only once
    # 40 of them had ended (57 s)
    assert not ended, len(ended)
    assert agent.alive()
