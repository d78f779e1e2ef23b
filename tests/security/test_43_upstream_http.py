"""An upstream on streamable HTTP can neither exhaust the proxy's memory nor end it.

Finding 1: ``cradle-kg mcp proxy --upstream URL`` read its upstream with the SDK's
``streamablehttp_client``, which reads a JSON answer whole (``response.aread()``) and an
event stream's event with its lines joined, with no limit — the cap of the stdio upstream
(``test_40``) did not hold here. An upstream answering a ``tools/call`` with 300 MB of
JSON grew the proxy by 1.7 GB (the call then failed on ``max_output_bytes``); one event
without end — an endless ``data:`` line, or endless short ``data:`` lines — grew it by
2.5 GB in 8 s and on without bound; 300 MB gzip-compressed into 300 KB, which httpx
decodes, did the same as the 300 MB. The proxy now gives the SDK an httpx client of its
own (:mod:`cradle_kg.integrations.upstream_http`) whose transport reads every answer
under the stdio cap, ``4 * max_output_bytes + max_bytes``: a JSON answer or an event is
held at most that long, past it the rest is not read (the connection is closed) and the
call fails at once with a typed error (the gateway journals a failed call); the session
goes on and the next call goes through. A compressed answer is refused (the client asks
for ``identity``). An answer to a call that has not ended ``UPSTREAM_TIMEOUT`` after it
was sent is cut there, even if it never stops sending.

Finding 2: a redirect off the upstream's origin, or an HTTP error status, ended the proxy.
With the SDK installed (1.30), which follows a redirect only within the endpoint's origin,
a 307 to another origin — or a 500 — raised out of the SDK's task group: the proxy exited
(code 2) and every call in flight with it. With mcp 1.20, which the package allows, the
SDK's client followed every redirect: a 307 to another origin had the proxy post the
call there — its arguments, its idempotency key (checked by hand against the same
upstream). The transport now refuses a redirect off the upstream's origin and answers
the call with an error, whatever the SDK version, as it does an error status.

A real ``cradle-kg mcp proxy --upstream URL`` subprocess on pipes (raw JSON-RPC lines), in
front of a real hostile server on 127.0.0.1 (``http_upstream.py``: the official SDK's
server for ``initialize``, ``tools/list`` and the honest tool, the hostile answers
written by hand); the proxy's resident memory is read from ``/proc/<pid>/status``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.storage.opening import home_journal_target, verify_target

from .jsonl_process import JsonLinesProcess, capped_proxy_home, failed_text

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")

#: the proxy may grow by this much while the upstream sends 300 MB
GROWTH_MB = 96
UPSTREAM = Path(__file__).parent / "http_upstream.py"
TOOLS = ("blast", "bomb", "flood", "drip", "stall", "away", "boom", "twice", "twice_sse", "fine")
CONTRACTS = "tools:\n" + "".join(
    f"  {n}:\n    side_effect: read_only\n    target: 'test:{n}'\n" for n in TOOLS)


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[str]:
    """The hostile server's URL (it records what reaches its other origin in
    ``tmp_path/stolen.jsonl``)."""
    yield from hostile_upstream(tmp_path)


def hostile_upstream(tmp_path: Path) -> Iterator[str]:
    """Start ``http_upstream.py`` in ``tmp_path``; yield its URL; stop it."""
    with (tmp_path / "upstream.stderr").open("wb") as err:
        server = subprocess.Popen([sys.executable, str(UPSTREAM), str(tmp_path)],
                                  stdout=subprocess.PIPE, stderr=err)
        try:
            assert server.stdout is not None
            ports = json.loads(server.stdout.readline() or "null")
            assert ports, (tmp_path / "upstream.stderr").read_text()
            yield f"http://127.0.0.1:{ports[0]}/mcp"
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:  # a connection it still waits on
                server.kill()
                server.wait()


class Proxy(JsonLinesProcess):
    """A ``cradle-kg mcp proxy --upstream URL`` on pipes; its home's answers capped at
    ``4 * 1 MiB + max_bytes (1 MiB)``: 5 MiB."""

    def __init__(self, home: Path, tmp: Path, url: str, contracts_text: str = CONTRACTS
                 ) -> None:
        capped_proxy_home(home)
        contracts = tmp / "contracts.yaml"
        contracts.write_text(contracts_text)
        self.stderr = (tmp / "proxy.stderr").open("wb")
        super().__init__(["mcp", "proxy", "--home", str(home), "--agent", AGENT,
                          "--contracts", str(contracts), "--prefix", "test.up.",
                          "--upstream", url], stderr=self.stderr, client="client")

    def failed(self, rid: int, tool: str) -> str:
        """The error of a call that must fail, the proxy held under ``GROWTH_MB``."""
        answer, grown = self.call_watching_memory(rid, "test.up." + tool, limit_mb=GROWTH_MB,
                                                  timeout=30)
        assert grown < GROWTH_MB
        return failed_text(answer)

    def fine(self, rid: int) -> None:
        answer, _ = self.call_watching_memory(rid, "test.up.fine", limit_mb=GROWTH_MB)
        assert answer["result"].get("isError") is not True, answer
        assert answer["result"]["structuredContent"] == {"ok": True}, answer

    def close(self, tmp: Path) -> str:
        """Its stderr, once it has left cleanly."""
        try:
            code = self.stop()
        finally:
            self.stderr.close()
        err = (tmp / "proxy.stderr").read_text(encoding="utf-8", errors="replace")
        assert code == 0, err
        assert "Traceback" not in err, err
        return err


def _reported_ok(home: Path) -> list[bool]:
    """The journal's word on each call, in order (and the journal intact)."""
    assert verify_target(home_journal_target(home)).intact
    with Runtime(home) as rt:
        return [e.payload["observation"]["reported_ok"]
                for e in rt.journal.events_of_kind("action.observed")]


def test_an_http_answer_past_the_cap_is_dropped_and_the_call_fails(
        home: Path, tmp_path: Path, upstream: str) -> None:
    proxy = Proxy(home, tmp_path, upstream)
    try:
        assert "limit of 5242880 bytes" in proxy.failed(2, "blast")  # 300 MB of JSON
        proxy.fine(3)  # the session goes on
        assert "compressed" in proxy.failed(4, "bomb")  # 300 KB, 300 MB once decoded
        assert "limit" in proxy.failed(5, "flood")  # an event's line without end
        assert "limit" in proxy.failed(6, "drip")  # an event without end
        proxy.fine(7)
    finally:
        proxy.close(tmp_path)
    assert _reported_ok(home) == [False, True, False, False, False, True]


def test_an_http_upstream_can_neither_redirect_the_proxy_nor_end_it(
        home: Path, tmp_path: Path, upstream: str) -> None:
    proxy = Proxy(home, tmp_path, upstream)
    try:
        away = proxy.failed(2, "away")  # a 307 to another origin: not followed
        assert "off the upstream's origin" in away and "not followed" in away, away
        assert "HTTP 500" in proxy.failed(3, "boom")
        proxy.fine(4)  # the proxy is still there, the session too
    finally:
        proxy.close(tmp_path)
    assert not (tmp_path / "stolen.jsonl").exists()  # nothing reached the other origin
    assert _reported_ok(home) == [False, False, True]


def test_an_http_answer_that_never_ends_is_cut_at_the_deadline(upstream: str) -> None:
    """An answer that keeps sending (a comment every 50 ms: the read timeout never fires)
    and never answers is cut ``deadline`` seconds after the call was sent — the proxy's is
    ``UPSTREAM_TIMEOUT``; 1 s here, through the proxy's own HTTP client."""
    from cradle_kg.integrations.upstream_http import client_factory

    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "stall", "arguments": {}}}

    async def stalled() -> tuple[str, float]:
        async with client_factory(upstream, cap=1 << 20, deadline=1.0)() as client:
            started = time.monotonic()
            response = await client.post(upstream, json=call, headers={
                "accept": "application/json, text/event-stream"})
            return response.text, time.monotonic() - started

    text, took = anyio.run(stalled)
    assert 1.0 <= took < 10, took
    event = next(line for line in text.splitlines() if line.startswith("data: "))
    answer = json.loads(event.removeprefix("data: "))
    assert answer["id"] == 9 and "not ended within 1 s" in answer["error"]["message"], text
