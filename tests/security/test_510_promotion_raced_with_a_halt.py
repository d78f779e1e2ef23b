"""Finding: ``autonomy promote`` read the step's stage (shadow), checked its admin, the
fresh decisions and the agreement, then journaled ``autonomy.promoted`` whatever had been
written about the step since. Another admin's kill switch (``autonomy halt``, from another
worker or terminal) landing between the two was undone: the step read ``promoted`` after
it, the halt's reason gone, and the rule answered the next run in place of a person
(``human.automated``) — a promotion decided on a stage that no longer held.

Now the promotion is written only over the step's events it read (``if_last`` on the
step's subject, checked under the journal's writer lock); a change that came first has
the promotion decided again on what is now there (at most three times) — here refused,
"the step is in `halted`", nothing journaled — and the halt stands.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.demo.scenario import APPROVER
from cradle_kg.errors import AutonomyError
from cradle_kg.loop.runtime import Runtime
from cradle_kg.workflow import runner
from cradle_kg.workflow.autonomy import AutonomyState, Stage

from .test_339_promote_outside_scope import FRANK, STEP, WF, _in_shadow
from .test_409_promoted_rule_own_agent import _run

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_a_halt_landing_while_a_promotion_is_decided_stands(
        ledger_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _in_shadow(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt, \
            Runtime(ledger_home, graph_sync=False) as other:
        book = runner.open_engine(rt).autonomy
        halting = runner.open_engine(other).autonomy
        measured, halts = book.agreement, []

        def halted_meanwhile(st: AutonomyState) -> tuple[int, int]:
            """The promotion has read the step in shadow: another admin halts it now."""
            if not halts:
                halts.append(halting.halt(WF, STEP, by=APPROVER, reason="audit in progress"))
            return measured(st)

        monkeypatch.setattr(book, "agreement", halted_meanwhile)
        # before: promoted, over the halt
        with pytest.raises(AutonomyError, match="halted"):
            book.promote(WF, STEP, admin=FRANK, token="t-" + FRANK)
        assert halts and halting.state(WF, STEP).stage is Stage.HALTED
        assert rt.journal.events_of_kind("autonomy.promoted") == []
    kinds = _run(ledger_home, "after-the-halt")
    assert "human.automated" not in kinds and "human.requested" in kinds, kinds


def test_a_promotion_nothing_raced_is_written(ledger_home: Path) -> None:
    _in_shadow(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        book = runner.open_engine(rt).autonomy
        assert book.promote(WF, STEP, admin=FRANK, token="t-" + FRANK)["admin"] == FRANK
        assert book.state(WF, STEP).stage is Stage.PROMOTED
    assert "human.automated" in _run(ledger_home, "after-promotion")
