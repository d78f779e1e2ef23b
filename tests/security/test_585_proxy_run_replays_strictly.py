"""A run ``mcp proxy`` served replays strictly, hash for hash, as a pack's run does.

Finding (issue 12: the runtime's guarantees hold for upstream tools exactly as for native
ones): ``cradle-kg replay --strict`` refused every run ``mcp proxy`` had served — "its
decision at seq … was made for the tool `test.up.append@upstream-…`, which no installed
pack provides" (``test_580``). The replay's scratch home holds the home's packs, and the
upstream's tools were registered only in the proxy's process: the journal did not say
what they were, so a strict replay could not decide those calls again, and the auditor
could not check a proxied run at all.

Now the proxy journals, at each start, what it registered (``tools.registered``: each
tool's id, the upstream's definition its version hashes, and the operator's contract —
no URL, no credential), and strict replay registers those specs again in its scratch
home with a function that is never called (the recorded answers are served): a real
proxy session — a write verified by its read, a read, a call denied — replays to the
journal's head.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import ClientSession

from cradle_kg.workflow.replay import strict_replay
from tests.integrations.conftest import cli
from tests.integrations.test_mcp_proxy import key, proxy_args, received, run
from tests.security.proxy_outage import journaled, proxied_home

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_a_proxied_session_replays_strictly_hash_for_hash(tmp_path: Path) -> None:
    home, upstream_dir, contracts = proxied_home(tmp_path)

    async def scenario(s: ClientSession) -> None:
        done = await s.call_tool("test.up.append", {"id": "n1", "text": "hello"},
                                 meta=key("k1"))
        assert not done.isError, done.content
        read = await s.call_tool("test.up.read", {"id": "n1"})
        assert read.structuredContent == {"id": "n1", "text": "hello"}, read.content
        denied = await s.call_tool("test.up.wipe", {"id": "n1"})
        assert denied.structuredContent["status"] == "denied", denied.structuredContent

    run(proxy_args(home, contracts, upstream_dir), scenario)
    events = journaled(home)
    served = [e for e in events if e.kind == "tools.registered"]
    assert len(served) == 1 and served[0].seq < min(
        e.seq for e in events if e.kind == "decision.made"), served
    assert {t["id"] for t in served[0].payload["tools"]} == {
        "test.up.append", "test.up.append_lie", "test.up.wipe", "test.up.read"}
    calls = received(upstream_dir)
    proxied = sorted({str(e.payload["decision"]["provenance"]["tool_ref"]) for e in events
                      if e.kind == "decision.made"})
    assert len(proxied) == 3 and all("@upstream-" in r for r in proxied), proxied

    # before: ReplayDivergenceError "... was made for the tool `test.up.append@upstream-…`,
    # which no installed pack provides ..."
    report = strict_replay(home)
    assert report.head_hash == events[-1].hash

    done = cli("replay", "--strict", "--home", str(home))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no installed pack" not in done.stdout + done.stderr
    assert received(upstream_dir) == calls  # the replays served what was recorded
    checked = cli("audit", "verify", "--semantics", "--home", str(home))
    assert checked.returncode == 0, checked.stdout + checked.stderr
