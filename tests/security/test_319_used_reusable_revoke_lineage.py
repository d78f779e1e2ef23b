"""A reusable approval revoked after its use takes back the approver's note too.

``test_313``: a revoke withdraws its approval's notes from the run's lineage — the
person's word vouching for a value ("GB29… is the landlord's new account"). A used
reusable approval could not be revoked before (``test_316``); now it can, and the
withdrawal applies to it as to one revoked before its use: Bob approved the transfer
reusable with that note, it ran (twice: proposed again, no person asked), he learnt the
e-mail was phishing and revoked it. The same transfer proposed again waits for a person,
the IBAN traced to the e-mail alone — in the same process and in a new one, whose run
index is rebuilt from the journal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg.records import ApprovalStatus, OutcomeStatus

from ..lineage.kit import submit, trace
from .test_101_rejection_note_lineage import ATTACKER, BOB, TOKEN, _runtime, refuse_first
from .test_313_revoked_approval_note_lineage import VOUCHED

pytestmark = pytest.mark.usefixtures("journal_backend")

SEND = {"recipient": ATTACKER, "amount": 900}


@pytest.mark.parametrize("restart", [False, True], ids=["same process", "restarted"])
def test_a_used_reusable_approvals_note_is_withdrawn(tmp_path: Path, restart: bool) -> None:
    sent: list[dict[str, Any]] = []
    rt = _runtime(tmp_path, sent)
    try:
        first = refuse_first(rt, ApprovalStatus.APPROVED, VOUCHED, once=False)
        assert submit(rt, 2, "send_money", SEND, target="bank").status is (
            OutcomeStatus.EXECUTED)  # reused, no person asked
        assert len(sent) == 2
        # before: refused `already_used`, and every later transfer ran
        rt.revoke_approval(first.approval.id, approver_id=BOB, token=TOKEN,
                           reason="that e-mail was phishing")
        if restart:
            rt.close()
            rt = _runtime(tmp_path, sent)
        again = submit(rt, 3, "send_money", SEND, target="bank")
        assert again.status is OutcomeStatus.AWAITING_APPROVAL, (again.status, again.reasons)
        assert again.approval is not None and again.approval.id != first.approval.id
        assert len(sent) == 2
        arg = next(a for a in trace(rt, "send_money")["arguments"] if a["name"] == "recipient")
        assert arg["untrusted_only"] and not arg["trusted_origin"], arg
        assert {o["kind"] for o in arg["origins"]} == {"observation"}
    finally:
        rt.close()
