"""A tool changed behind a streamable-HTTP upstream is refused before anything is journaled.

Asked: ``test_614``/``test_615`` showed ``mcp proxy`` refusing a tool whose definition
changed before anything of the call is journaled, over a stdio upstream only. Here the
same upstream (``poisoning_upstream.py``, the same tools and pins) is served over
streamable HTTP (``--upstream URL``), in two ways its tool can change mid-session:

- it changes ``save_note`` and says so (``notifications/tools/list_changed``, sent on the
  call's own stream before its answer): the proxy lists again before the next call
  (``Upstream.ready``);
- it is stopped, changed and started again on the same port without a word: the proxy,
  reaching it again (a new session, its tools listed and their pins compared, as
  ``test_489``), finds the change there.

Either way every later call of ``save_note`` is refused (``tool_changed``, not retryable)
with nothing of it journaled, the unchanged tool is still served, and the change is
journaled once (``tools.changed``). Not a finding: this held on the code as it was — the
test is the deliverable (the HTTP path covered).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from . import poisoning_upstream
from .poisoning_upstream import calls
from .proxy_outage import PATIENCE, HttpUpstream, through_http_proxy, unavailable
from .test_128_upstream_rug_pull import _reviewed
from .test_614_proxy_changed_tool_refused_early import (
    nothing_journaled_but_the_change,
    refused_changed,
)

pytest.importorskip("mcp")

SCRIPT = Path(poisoning_upstream.__file__)
LATER = ("n2", "n3", "n4")


def test_a_tool_changed_and_told_over_http_is_refused_early(tmp_path: Path) -> None:
    home, state, contracts, pins = _reviewed(tmp_path)
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession, up: HttpUpstream) -> None:
        first = await s.call_tool("test.up.save_note", {"id": "n1"})
        assert not first.isError, first.content
        armed = await s.call_tool("test.up.arm", {})  # changes save_note, says so
        assert not armed.isError, armed.content
        seen["after"] = [await s.call_tool("test.up.save_note", {"id": n}) for n in LATER]
        still = await s.call_tool("test.up.arm", {})  # unchanged: still served
        assert not still.isError, still.content

    through_http_proxy(home, contracts, state, scenario, SCRIPT)

    refused_changed(seen["after"])
    assert [(c["tool"], c.get("id")) for c in calls(state)] == [
        ("save_note", "n1"), ("arm", None), ("arm", None)]
    nothing_journaled_but_the_change(home, pins, LATER)


def test_a_tool_changed_while_the_http_upstream_was_away_is_refused(tmp_path: Path) -> None:
    home, state, contracts, pins = _reviewed(tmp_path)
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession, up: HttpUpstream) -> None:
        first = await s.call_tool("test.up.save_note", {"id": "n1"})
        assert not first.isError, first.content
        up.stop()
        (state / "mode").write_text("changed")  # changed while away, no notice
        finder = await s.call_tool("test.up.arm", {})  # finds it gone (arm: read only)
        assert finder.isError, finder.content
        await up.start_again()
        # relisted when reached again: arm (unchanged) is served once the proxy is back
        ends = time.monotonic() + PATIENCE
        back = await s.call_tool("test.up.arm", {})
        while unavailable(back):  # refused, retryable, while the proxy reaches it
            assert time.monotonic() < ends, "never reached again"
            await anyio.sleep(0.05)
            back = await s.call_tool("test.up.arm", {})
        assert not back.isError, back.content
        seen["after"] = [await s.call_tool("test.up.save_note", {"id": n}) for n in LATER]

    through_http_proxy(home, contracts, state, scenario, SCRIPT)

    refused_changed(seen["after"])
    assert [c.get("id") for c in calls(state) if c["tool"] == "save_note"] == ["n1"]
    nothing_journaled_but_the_change(home, pins, LATER)
