"""An HTTP upstream restarted between two calls: its session is opened again.

Finding: **an upstream that restarted while no call was made lost the proxy's session for
good.** The streamable-HTTP upstream forgets its sessions when it restarts and answers a
request naming one ``404``; the proxy kept sending the old ``Mcp-Session-Id``, so every
call from then on — the upstream up and well — journaled its intent, failed ``HTTP 404``
and opened a human task, until someone restarted the proxy.

Now: a ``404`` to a request that names the session (the spec's "start a new session")
marks the upstream lost, as a refused connection does (``test_489``): that call is
reconciled as before, later calls are refused before anything is written while a new
session is opened in the background, and then served through it.

A real proxy process in front of a real streamable-HTTP upstream process, stopped and
started again on the same port between two calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import ClientSession

from tests.integrations.test_mcp_proxy import key, received
from tests.security.proxy_outage import (
    HttpUpstream,
    append_once_served,
    journaled,
    proxied_home,
    through_http_proxy,
)


def test_an_http_upstream_restarted_between_calls_is_served_through_a_new_session(
        tmp_path: Path) -> None:
    home, upstream_dir, contracts = proxied_home(tmp_path)
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession, up: HttpUpstream) -> None:
        first = await s.call_tool("test.up.append", {"id": "n1", "text": "a"}, meta=key("k1"))
        assert not first.isError, first
        up.stop()
        await up.start_again()
        # the call that finds the session gone: written and reconciled as before
        seen["finder"] = await s.call_tool("test.up.append", {"id": "n9", "text": "z"},
                                           meta=key("k-finder"))
        seen["again"] = await append_once_served(s, "n2", "b", "k2")

    through_http_proxy(home, contracts, upstream_dir, scenario)

    again = seen["again"]
    assert not again.isError, again.structuredContent
    assert [c["id"] for c in received(upstream_dir, "append")] == ["n1", "n2"]  # once each

    kinds = [e.kind for e in journaled(home)]
    assert kinds.count("action.intent") == 3, kinds  # n1, the finder, n2
