"""A call whose connection to an HTTP upstream was refused: it never left the proxy.

Finding: **a call to an HTTP upstream that refused the connection was an unknown outcome,
and a human task.** The upstream stopped after the proxy listed its tools, the first call
of the outage passed the ``ready`` check (nothing had found it down yet), journaled its
intent, and its request could not be sent at all (``ConnectError``: no connection, not
one byte of the request out). The runtime recorded it as any exception: ``failed``, "the
state of the target is unknown", a human task (``tests/security/test_489``'s "finder").

Now: the proxy's transport tells the channel which call's request could not be sent —
by the call's idempotency key, never by what an answer says (an upstream may answer any
error) — and the proxied tool raises the proxy's typed refusal ``upstream_not_reached``
(as on stdio, ``test_591``): ``failed``, final for its key, no human task, the same key
answering the recorded refusal. The upstream is taken as down at that moment (the next
call is refused before its intent, ``tool_unavailable``, while a new session is tried).
A deadline, a connection reset or closed after the request was sent, an error status or a
read error stay unknown (:data:`cradle_kg.integrations.upstream_http.NOT_SENT` is the
connection error alone).

A real proxy process in front of a real streamable-HTTP upstream process, stopped (its
port refusing) and started again on the same port.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import ClientSession

from tests.integrations.test_mcp_proxy import key, received
from tests.security.proxy_outage import (
    HttpUpstream,
    append_once_served,
    assert_refused_retryable,
    journaled,
    proxied_home,
    through_http_proxy,
)


def test_a_call_whose_connection_was_refused_is_refused_not_unknown(tmp_path: Path) -> None:
    home, upstream_dir, contracts = proxied_home(tmp_path)
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession, up: HttpUpstream) -> None:
        first = await s.call_tool("test.up.append", {"id": "n1", "text": "a"}, meta=key("k1"))
        assert not first.isError, first
        up.stop()  # its port refuses from now
        seen["lost"] = await s.call_tool("test.up.append", {"id": "n9", "text": "z"},
                                         meta=key("k-lost"))
        seen["next"] = await s.call_tool("test.up.append", {"id": "n2", "text": "b"},
                                         meta=key("k-next"))
        seen["same"] = await s.call_tool("test.up.append", {"id": "n9", "text": "z"},
                                         meta=key("k-lost"))
        await up.start_again()
        seen["again"] = await append_once_served(s, "n2", "b", "k2")

    through_http_proxy(home, contracts, upstream_dir, scenario)

    lost = seen["lost"].structuredContent
    assert lost["status"] == "failed", lost
    assert lost.get("refusal", {}).get("code") == "upstream_not_reached", lost
    assert not [r for r in lost["reasons"] if "human task" in r], lost["reasons"]
    assert_refused_retryable([seen["next"]])  # taken as down at that call
    same = seen["same"]
    assert same.meta["cradle-kg/replayed"] is True, same.meta  # the recorded refusal
    assert same.structuredContent["refusal"]["code"] == "upstream_not_reached"
    assert not seen["again"].isError, seen["again"].structuredContent
    assert [c["id"] for c in received(upstream_dir, "append")] == ["n1", "n2"]

    events = journaled(home)
    kinds = [e.kind for e in events]
    assert not [k for k in kinds if k.startswith("human_task")], kinds
    intent = next(e for e in events if e.kind == "action.intent"
                  and e.payload["action"]["arguments"].get("id") == "n9")
    about = [e.kind for e in events if e.subject == intent.subject
             and e.kind.startswith("action.")]
    assert about == ["action.intent", "action.observed", "action.replayed"], about
    assert not [e for e in events if "k-next" in str(e.payload)]  # nothing of it written


def test_only_a_connection_never_made_is_not_sent() -> None:
    """Strict: a request that may have left — a deadline, a reset or closed connection, a
    write or read error — is not reported unsent; a connection that could not be made
    is, by the call's key. Each one the transport answers with an error for its id."""
    import json

    import anyio
    import httpx

    from cradle_kg.integrations.upstream_http import CappedTransport

    class Failing(httpx.AsyncBaseTransport):
        def __init__(self, exc: Exception) -> None:
            self.exc = exc

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            raise self.exc

    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "append", "arguments": {}, "_meta": {"cradle-kg/idempotency_key": "k7"}}})
    url = httpx.URL("http://127.0.0.1:9/mcp")

    def told(exc: Exception) -> list[str]:
        unsent: list[str] = []
        lost: list[bool] = []
        transport = CappedTransport(Failing(exc), url, cap=1 << 20, deadline=5.0,
                                    lost=lambda: lost.append(True),
                                    unsent=lambda r: unsent.append(json.loads(r.content)[
                                        "params"]["_meta"]["cradle-kg/idempotency_key"]))
        request = httpx.Request("POST", url, content=body.encode())
        answer = anyio.run(transport.handle_async_request, request)
        assert answer.status_code == 200  # the error answering id 7: the call fails now
        return unsent

    assert told(httpx.ConnectError("refused")) == ["k7"]
    for sent in (httpx.ReadError("reset"), httpx.WriteError("broken pipe"),
                 httpx.RemoteProtocolError("closed without an answer"),
                 httpx.ReadTimeout("late"), httpx.ConnectTimeout("slow")):
        assert told(sent) == [], sent
