"""Finding (what a refusal must keep): strict replay serves a tool's recorded answer, and
re-raises a recorded exception by its name and message — a refusal re-raised as a plain
exception would be an unknown outcome again, retried and escalated, and the replay would
diverge from the journal that recorded ``refusal``.
Now strict replay serves a recorded refusal as the :class:`cradle_kg.ToolRefused` it was
(its code and message, from the observation): a journal holding a refused credit replays
hash for hash, and one whose refusal an author rewrote (chain recomputed) diverges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, prepare_home
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.records import ApprovalStatus, AuditEvent, OutcomeStatus
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.workflow.replay import strict_replay
from tests.conftest import proposal
from tests.security.handed import rechained

ACCOUNT = "acct-559"


def _refused(home: Path) -> str:
    prepare_home(home)
    with Runtime(home, graph_sync=False) as rt:
        opened = rt.submit(proposal("p559-open", "demo.ledger.credit",
                                    {"account": ACCOUNT, "amount": 5}))
        assert opened.status is OutcomeStatus.EXECUTED, opened.reasons
        waiting = rt.submit(proposal("p559-close", "demo.ledger.close_account",
                                     {"account": ACCOUNT}))
        assert waiting.approval is not None, waiting
        rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)
        out = rt.submit(proposal("p559-credit", "demo.ledger.credit",
                                 {"account": ACCOUNT, "amount": 300}))
        assert out.observation is not None and out.observation.refusal == "account_closed"
        return out.run_id


def test_a_refusal_replays_strictly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run = _refused(home)
    report = strict_replay(home)
    assert run in report.runs, report


def test_a_rewritten_refusal_diverges(tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)  # a handed home: its own file
    home = tmp_path / "home"
    _refused(home)
    forged: list[int] = []

    def author(before: AuditEvent | None, ev: AuditEvent) -> tuple[str, dict[str, Any]]:
        observation = ev.payload.get("observation")
        if ev.kind == "action.observed" and isinstance(observation, dict) \
                and observation.get("refusal"):
            forged.append(ev.seq)  # "it refused for another reason"
            return ev.subject, {**ev.payload,
                                "observation": {**observation, "refusal": "over_limit"}}
        return ev.subject, ev.payload

    rechained(home, tmp_path / "forged", author)
    assert len(forged) == 1
    with pytest.raises(ReplayDivergenceError):
        strict_replay(tmp_path / "forged")
