"""An HTTP upstream that cannot be reached: refused before any intent, and reached again.

Finding: **``mcp proxy --upstream URL`` did not watch its upstream.** With the upstream
stopped (connection refused), every call still passed gate 1, journaled its intent, failed
(``ConnectError``) and — gate 2 reading nothing either — opened a human task: one per call
of one outage, for calls that provably never left the proxy (what ``test_476`` fixed for a
stdio upstream).

Now: a call that finds the upstream unreachable (the connection refused, reset, closed: not
an application error) marks it down. That call is reconciled as before (its intent is
written; its key's next call answers its outcome, never a second call); every later call
is refused before anything is journaled — ``tool_unavailable``, retryable with a
``retry_after`` — while a background probe (a new session: initialize, list the tools,
compare their pins; at once, then backing off) tries the upstream; reached again, it is
served through the new session.

A real proxy process in front of a real streamable-HTTP upstream process, stopped and
started again on the same port.
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
    unavailable,
)


def test_an_unreachable_http_upstream_is_refused_before_any_intent_and_reached_again(
        tmp_path: Path) -> None:
    home, upstream_dir, contracts = proxied_home(tmp_path)
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession, up: HttpUpstream) -> None:
        first = await s.call_tool("test.up.append", {"id": "n1", "text": "a"}, meta=key("k1"))
        assert not first.isError, first
        up.stop()
        # the call that finds it unreachable: written and reconciled as before
        seen["finder"] = await s.call_tool("test.up.append", {"id": "n9", "text": "z"},
                                           meta=key("k-finder"))
        seen["outage"] = [await s.call_tool("test.up.append", {"id": "n2", "text": "b"},
                                            meta=key(f"k-out-{i}")) for i in range(3)]
        await up.start_again()
        seen["again"] = await append_once_served(s, "n2", "b", "k2")

    through_http_proxy(home, contracts, upstream_dir, scenario)

    assert not unavailable(seen["finder"]), seen["finder"]
    assert_refused_retryable(seen["outage"])  # nothing written (checked below)
    again = seen["again"]
    assert not again.isError, again.structuredContent
    assert [c["id"] for c in received(upstream_dir, "append")] == ["n1", "n2"]  # once each

    events = journaled(home)
    kinds = [e.kind for e in events]
    assert kinds.count("action.intent") == 3, kinds  # n1, the finder, n2: none for the outage
    assert not [e for e in events if "k-out-" in str(e.payload)]  # nothing of them written
