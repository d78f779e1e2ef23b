"""A proxied tool whose definition changed is refused before anything is journaled.

Finding: **every call of a tool the upstream changed under a running ``mcp proxy`` (a "rug
pull", ``test_128``) was journaled and failed, one record per call.** The refusal was the
proxied tool's own: the call passed gate 1, its intent was journaled, the tool raised
"`save_note` changed since it was reviewed" and the call's outcome was written ``failed``
— an agent retrying in a loop wrote an intent and a failed outcome per attempt (a write
tool's also a human task each: "the state of the target is unknown"), for calls that
provably never left the proxy. An upstream that is down was already refused before
anything was journaled (``Upstream.unavailable``, ``test_476``); a changed one was not.

Now a changed tool is refused as a gone upstream is, before anything is journaled (its
``ready``: the upstream listed again first when it said its tools changed): ``refused``,
``reason_codes: ["tool_changed"]``, **not** retryable (no ``retryable``, no
``retry_after``: the same call will never be served until the operator reviews the tool
again and restarts the proxy), the message saying the definition changed and the hint
what the operator must do (``cradle-kg mcp pins``). The operator's alert stays: the change
is logged, and journaled once per change — a ``tools.changed`` event in the runtime's
``upstream-tools`` run, where the proxy journals ``tools.registered`` — not once per call;
strict replay copies it, and ``audit verify`` holds.

A real proxy process in front of a real upstream process (``poisoning_upstream.py``) that
changes ``save_note``'s description mid-session and says so
(``notifications/tools/list_changed``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from cradle_kg.loop.runtime import Runtime
from cradle_kg.workflow.replay import strict_replay

from ..integrations.conftest import cli
from ..integrations.test_mcp_proxy import run
from .poisoning_upstream import calls
from .test_127_upstream_descriptions import proxy_args
from .test_128_upstream_rug_pull import _reviewed

pytest.importorskip("mcp")


def refused_changed(results: list[Any]) -> list[str]:
    """Each of ``results`` refused ``tool_changed`` before anything, not retryable, naming
    ``save_note``; their texts (shared with ``test_625``)."""
    texts = []
    for after in results:
        assert after.isError
        body = after.structuredContent or {}
        said = " ".join(str(body).split())
        assert body.get("status") == "refused", body
        assert body.get("reason_codes") == ["tool_changed"], body
        assert "retryable" not in body and "retry_after" not in body, body
        assert "`save_note` changed since it was reviewed" in said, said
        texts.append(said)
    return texts


def nothing_journaled_but_the_change(home: Path, pins: dict[str, str],
                                     later: tuple[str, ...]) -> tuple[list[Any], Any]:
    """(the journal's events, its one ``tools.changed``): nothing of the calls ``later``
    (their ids) journaled, no human task, the change of ``save_note`` from its pin once."""
    with Runtime(home) as rt:
        events = list(rt.journal.events())
        assert rt.journal.verify().intact
    of_later = [e for e in events if any(f"'{n}'" in str(e.payload) or f'"{n}"' in
                                         str(e.payload) for n in later)]
    assert of_later == [], [(e.kind, e.run_id) for e in of_later]  # nothing of them
    kinds = [e.kind for e in events]
    assert not [k for k in kinds if k.startswith("human_task")], kinds
    changes = [e for e in events if e.kind == "tools.changed"]
    assert len(changes) == 1, changes  # once per change, not per call
    assert changes[0].payload["tool"] == "save_note", changes[0].payload
    assert changes[0].payload["pin"] == pins["save_note"], changes[0].payload
    return events, changes[0]


def test_a_changed_tool_is_refused_before_anything_is_journaled(tmp_path: Path) -> None:
    home, state, contracts, pins = _reviewed(tmp_path)
    seen: dict[str, Any] = {}

    async def scenario(s: ClientSession) -> None:
        first = await s.call_tool("test.up.save_note", {"id": "n1"})
        assert not first.isError, first.content
        armed = await s.call_tool("test.up.arm", {})  # the upstream changes save_note
        assert not armed.isError, armed.content
        seen["after"] = [await s.call_tool("test.up.save_note", {"id": f"n{i}"})
                         for i in range(2, 5)]
        still = await s.call_tool("test.up.arm", {})  # unchanged: still served
        assert not still.isError, still.content

    run(proxy_args(home, contracts, state), scenario)

    for said in refused_changed(seen["after"]):
        assert "cradle-kg mcp pins" in said, said
    assert [(c["tool"], c.get("id")) for c in calls(state)] == [
        ("save_note", "n1"), ("arm", None), ("arm", None)]

    events, change = nothing_journaled_but_the_change(home, pins, ("n2", "n3", "n4"))
    assert change.run_id == "upstream-tools", change
    assert change.payload["served_as"] == "test.up.save_note", change.payload
    assert str(change.payload["listed"]).startswith("sha256:"), change.payload
    assert change.payload["listed"] != pins["save_note"], change.payload

    report = strict_replay(home)  # the change is copied: the replay stays whole
    assert report.head_hash == events[-1].hash
    checked = cli("audit", "verify", "--semantics", "--home", str(home))
    assert checked.returncode == 0, (checked.stdout, checked.stderr)
