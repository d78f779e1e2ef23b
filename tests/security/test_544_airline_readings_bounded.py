"""``travel.airline``: gate 1's readings kept for the write's second look stay bounded.

Finding (twenty-fifth review, the late changes: ``test_530``'s second look): the validator
keeps its reading of every write it allows (``tools.remember_decided``) until the tool
applies it, in a list per (home, run, agent, tool, arguments); the bound (4,096) counted
keys, not readings. A proposal the validator allows and a later check of gate 1 stops
(an unknown environment, a rate limit, a deduplicated key) is never run, so its reading
was never taken off: one agent re-sending one such proposal grew one key's list by a
reading (with the proposal's statements, the agent's own among them) per request, without
limit — 60 requests, 60 readings held.

Now a key holds its distinct readings only (a reading equal to one held, the clock aside,
is moved to the end, not added) and at most ``tools.READINGS_PER_KEY`` of them, the oldest
dropped; a write asks with the newest. A key is never emptied by a request of its own, so
the second look is never skipped for a call gate 1 just allowed.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from .airline_calls import AGENT, airline_runtime

pytestmark = pytest.mark.usefixtures("journal_backend")

UID = "isabella_garcia_4633"


def _pack_tools() -> Any:
    [mod] = [m for name, m in list(sys.modules.items())
             if name.startswith("cradle_pack_travel") and name.endswith(".tools")
             and hasattr(m, "remember_decided")]
    return mod


def _held(tools: Any) -> int:
    return sum(len(v) for v in tools._DECIDED.values())


def _stopped_after_the_validator(rt: Any, run_id: str, hearsay: str) -> None:
    who = f"customer:{UID}"
    pid = f"p-{uuid.uuid4().hex[:12]}"
    out = rt.submit({
        "id": pid, "task_id": f"task-{pid}", "agent_id": AGENT, "on_behalf_of": who,
        "run_id": run_id,
        "facts": [{"subject": who, "predicate": "airline:compensationRequested",
                   "object": "cancelled_flight", "source": who},
                  {"subject": who, "predicate": "airline:confirmed", "object": "yes",
                   "source": who},
                  {"subject": "flight:x", "predicate": "airline:note", "object": hearsay,
                   "source": AGENT}],
        "action": {"action_type": "airline.send_certificate", "target": f"customer:{UID}",
                   "arguments": {"user_id": UID, "amount": 100},
                   "environment": "nowhere"}})
    assert str(out.status) == "denied"
    assert list(out.decision.reason_codes) == ["unknown_environment"]


@pytest.mark.parametrize("varied", [False, True], ids=["same", "varied-hearsay"])
def test_readings_of_calls_never_run_do_not_pile_up(tmp_path: Path, varied: bool) -> None:
    with airline_runtime(tmp_path) as rt:
        tools = _pack_tools()
        start = _held(tools)
        run_id = f"run-{uuid.uuid4().hex[:8]}"
        for i in range(60):
            _stopped_after_the_validator(rt, run_id, f"n{i}" if varied else "n")
        # before: 60 readings held for one key (one per request)
        assert _held(tools) - start <= tools.READINGS_PER_KEY
