"""Another agent asking for the same action cannot hold off an agent's keyed request.

Finding (twenty-second round's review of ``test_369``): a request under an agent's
idempotency key is written ``if_last`` over the newest event about the action's digest —
in any run — and decided again when one landed since its key was looked for, three times at
most, then refused: "other calls kept asking for the same action while it was decided;
submit it again". Every run's request for the same action is such an event, and another
agent holding the same grant asks in runs of its own (as many as its waiting quota allows,
256 by default): one request landing inside each read refused the agent's call. (Two
processes of ``agent:mallory`` asking in a loop for 15 s refused 15 of the 110 keyed calls
``agent:ledger-assistant`` made meanwhile, until mallory's 256 places were full.) As
``approval-decision:`` keys did for a person's decision (``test_333``), what the guard
protects is narrower: the key's requests are read in the proposal's own run
(``_pending_for_key``), and only an event of that run can change what it read.

Now an append refused because the action's newest event moved is written again at once over
the new newest when nothing about the action came in the proposal's own run since; an
event in its run makes it be decided again, as before (``test_369``: one request per key).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus

from .mcp_http import MALLORY, two_agent_home
from .test_236_pending_key_asks_once import _close

pytestmark = pytest.mark.usefixtures("journal_backend")


def _asking_in_every_check(rt: Runtime) -> list[int]:
    """From now on, each time a request checks its agent's waiting quota (after the
    action's newest event is read, before the append), ``agent:mallory`` asks for the same
    action in a new run of its own first."""
    flow = rt.approval_flow
    real = flow.check_waiting
    asked: list[int] = []

    def check_waiting(proposal: Any) -> Any:
        if proposal.agent_id != MALLORY:
            n = len(asked)
            other = {**_close(f"m{n}", key=f"m-{n}", run=f"run:mallory-{n}"),
                     "agent_id": MALLORY}
            out = rt.submit(other)
            assert out.status is OutcomeStatus.AWAITING_APPROVAL, out.reasons
            asked.append(n)
        return real(proposal)

    flow.check_waiting = check_waiting  # type: ignore[method-assign]
    return asked


def test_a_keyed_request_lands_while_another_agent_asks(tmp_path: Path) -> None:
    with Runtime(two_agent_home(tmp_path / "home"), graph_sync=False) as rt:
        asked = _asking_in_every_check(rt)
        # before: JournalError "other calls kept asking for the same action …; submit it
        # again", after three requests of mallory's
        out = rt.submit(_close("p1", key="close-k1"))
        assert out.status is OutcomeStatus.AWAITING_APPROVAL, out.reasons
        assert out.approval is not None
        requests = [e for e in rt.journal.events() if e.kind == "approval.requested"]
        mine = [e for e in requests if e.run_id == "run:alice"]
        assert len(mine) == 1 and mine[0].payload["approval"]["id"] == out.approval.id
        assert asked and len(requests) == 1 + len(asked)
        assert max(e.seq for e in requests if e.run_id != "run:alice") < mine[0].seq
        # the key asks once: again under it, the same approval is read, nothing written
        again = rt.submit(_close("p2", key="close-k1"))
        assert again.approval is not None and again.approval.id == out.approval.id
        assert [e for e in rt.journal.events() if e.kind == "approval.requested"
                and e.run_id == "run:alice"] == mine
        assert rt.journal.verify(semantics=True).intact
