"""During an outage, a key whose outcome is recorded is answered from the journal.

Finding: **a repeat of a key whose outcome the journal already holds was refused while the
upstream was down.** The ``ready`` check (``tests/security/test_476``) stood before
everything — a client that made the same call again (its answer lost on the way back,
say) was told ``tool_unavailable`` and to retry, for an answer the runtime had at hand and
gives at any other time without calling anything.

Now: the check stands only before what would write something new — a repeat of a key
whose intent has a recorded outcome goes on to gate 1 and is answered from the record
(``replayed``), the upstream still down; a new key (or one whose intent has no outcome:
reconciling it needs the upstream) is still refused before anything is written.

A real proxy process in front of a real stdio upstream process, killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from mcp import ClientSession

from tests.integrations.test_mcp_proxy import key, proxy_args, received, run
from tests.security.proxy_outage import gone, journaled, proxied_home, starts, until


def test_a_recorded_key_is_answered_while_the_upstream_is_down(tmp_path: Path) -> None:
    home, upstream_dir, contracts = proxied_home(tmp_path)
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession) -> None:
        first = await s.call_tool("test.up.append", {"id": "n1", "text": "a"}, meta=key("k1"))
        assert not first.isError, first
        [(_, pid)] = starts(upstream_dir)
        (upstream_dir / "refuse_start").write_text("")  # it stays down
        os.kill(pid, signal.SIGKILL)
        await until(lambda: gone(pid), "the upstream died")
        seen["new"] = await s.call_tool("test.up.append", {"id": "n2", "text": "b"},
                                        meta=key("k-new"))
        seen["again"] = await s.call_tool("test.up.append", {"id": "n1", "text": "a"},
                                          meta=key("k1"))

    run(proxy_args(home, contracts, upstream_dir), scenario)

    new = seen["new"].structuredContent
    assert new["status"] == "refused" and new["reason_codes"] == ["tool_unavailable"], new
    again = seen["again"]
    assert not again.isError, again
    assert again.meta["cradle-kg/status"] == "executed", again.meta
    assert again.meta["cradle-kg/replayed"] is True, again.meta
    assert again.structuredContent == {"id": "n1", "text": "a"}  # the recorded answer
    assert [c["id"] for c in received(upstream_dir, "append")] == ["n1"]  # called once

    events = journaled(home)
    kinds = [e.kind for e in events]
    assert kinds.count("action.intent") == 1, kinds
    assert not [e for e in events if "k-new" in str(e.payload)]  # nothing of it written
