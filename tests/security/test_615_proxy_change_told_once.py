"""A tool's change is told once, however many calls are refused for it; and a call past
the early refusal is still refused at the call.

Finding: (with ``test_614``) the change of a proxied tool was seen, and reported, only
inside each refused call — nothing told the operator once that the upstream changed it.

Now :meth:`Upstream.ready` — asked before anything of a call is journaled — lists the
upstream again when it said its tools changed, and refuses a changed tool with a
:class:`~cradle_kg.errors.ToolChangedError` (``tool_changed``, not retryable); the change
is handed to ``on_change`` (what ``register`` journals as ``tools.changed``) once, the
first time it is seen, whichever path sees it: the early refusal, the call's own check
(a call already past the early refusal when the change is seen: still refused there, as
before), or a restart's listing. A real upstream process over stdio
(``poisoning_upstream.py``) whose description of ``save_note`` changes; the proxy is told
as the upstream's ``notifications/tools/list_changed`` tells it (``stale``).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from cradle_kg.errors import ToolChangedError, ToolError
from cradle_kg.integrations.proxy import connect
from cradle_kg.integrations.upstream_pins import pin_of

from .poisoning_upstream import upstream_command

pytest.importorskip("mcp")


def test_a_change_is_told_once_and_refused_early_and_at_the_call(tmp_path: Path) -> None:
    state = tmp_path / "upstream"
    state.mkdir()
    told: list[tuple[str, str, str | None]] = []

    async def main() -> None:
        async with connect(upstream_command(state), None) as (up, tools):
            up.pins.update({t.name: pin_of(t) for t in tools})  # what `register` keeps
            up.on_change = lambda *change: told.append(change)
            assert await anyio.to_thread.run_sync(up.ready, "save_note") is None
            (state / "mode").write_text("changed")  # `save_note` described otherwise
            up.stale.set()  # as the upstream's notice does
            refused = await anyio.to_thread.run_sync(up.ready, "save_note")
            assert isinstance(refused, ToolChangedError), refused
            assert refused.code == "tool_changed" and not refused.retryable
            assert "`save_note` changed since it was reviewed" in refused.message
            assert "cradle-kg mcp pins" in (refused.hint or "")
            assert await anyio.to_thread.run_sync(up.ready, "arm") is None  # unchanged
            up.stale.set()  # listed again: the same change is not told again
            again = await anyio.to_thread.run_sync(up.ready, "save_note")
            assert isinstance(again, ToolChangedError)
            with pytest.raises(ToolError, match="changed since it was reviewed"):
                await anyio.to_thread.run_sync(up.check, "save_note")  # past `ready`: refused
            assert len(told) == 1, told
            [(tool, pin, listed)] = told
            assert tool == "save_note" and pin == up.pins["save_note"]
            assert listed is not None and listed != pin

    anyio.run(main)


def test_a_change_seen_first_by_the_call_is_told_once_and_refused(tmp_path: Path) -> None:
    """The notice arrives after the call's early check: the call's own check lists again,
    refuses it, and tells the change — once."""
    state = tmp_path / "upstream"
    state.mkdir()
    told: list[tuple[str, str, str | None]] = []

    async def main() -> None:
        async with connect(upstream_command(state), None) as (up, tools):
            up.pins.update({t.name: pin_of(t) for t in tools})
            up.on_change = lambda *change: told.append(change)
            assert await anyio.to_thread.run_sync(up.ready, "save_note") is None  # passed
            (state / "mode").write_text("changed")  # `save_note` described otherwise
            up.stale.set()
            with pytest.raises(ToolError, match="changed since it was reviewed"):
                await anyio.to_thread.run_sync(up.check, "save_note")
            refused = await anyio.to_thread.run_sync(up.ready, "save_note")
            assert isinstance(refused, ToolChangedError)
            assert [t for t, _, _ in told] == ["save_note"]

    anyio.run(main)
