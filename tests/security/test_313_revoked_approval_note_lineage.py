"""A revoked approval's note stayed the person's word for the values it quoted.

Finding (review of the nineteenth round's ``approvals revoke``): lineage indexes an
approver's note on an approving decision (``approval.decided``'s ``reason``) as a trusted
source of the run — the person vouching for a value ("yes: GB29… is the landlord's new
account, pay it"). Revoking the approval took back the approval, not the note: its leaf
stayed trusted. The approver who learnt the e-mail was phishing revoked the approval
(README: "the wrong account"), the injected agent proposed the same transfer again (a new
proposal: one MCP session is one run) and the IBAN, quoted in the revoked approval's note,
had a trusted origin and a trusted instruction to send there: no lineage rule held it, no
person was asked, and the transfer the approver had just taken back **executed
unattended**, the money sent to the attacker's IBAN.

Now a revoke withdraws its approval's notes from the run's lineage: they are read as
untrusted from the revoke on (rebuilt from the journal in the same order, so every
process and a replay read the same), and the transfer proposed again waits for a person.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg.records import ApprovalStatus, OutcomeStatus

from ..lineage.kit import submit, trace
from .test_101_rejection_note_lineage import (
    ATTACKER,
    BOB,
    TOKEN,
    _decided_then_proposed_again,
    _runtime,
    refuse_first,
)

pytestmark = pytest.mark.usefixtures("journal_backend")

VOUCHED = f"Yes: {ATTACKER} is the landlord's new account, send the rent there."


def _revoked_then_proposed_again(tmp_path: Path, *, restart: bool
                                 ) -> tuple[Any, Any, dict[str, Any], list[dict[str, Any]]]:
    """The transfer approved with Bob's note vouching for the IBAN (recorded, not run),
    the approval revoked, then the same transfer proposed again — by the same runtime, or
    (``restart``) by a new one whose run index is rebuilt from the journal: the first
    approval, the outcome, the recipient's lineage, what was sent."""
    sent: list[dict[str, Any]] = []
    rt = _runtime(tmp_path, sent)
    try:
        first = refuse_first(rt, ApprovalStatus.APPROVED, VOUCHED, resume=False)
        rt.revoke_approval(first.approval.id, approver_id=BOB, token=TOKEN,
                           reason="that e-mail was phishing")
        if restart:
            rt.close()
            rt = _runtime(tmp_path, sent)
        again = submit(rt, 2, "send_money", {"recipient": ATTACKER, "amount": 900},
                       target="bank")
        arg = next(a for a in trace(rt, "send_money")["arguments"] if a["name"] == "recipient")
        return first.approval, again, arg, sent
    finally:
        rt.close()


@pytest.mark.parametrize("restart", [False, True], ids=["same process", "restarted"])
def test_a_revoked_approvals_note_is_no_trusted_value(tmp_path: Path, restart: bool) -> None:
    first, again, arg, sent = _revoked_then_proposed_again(tmp_path, restart=restart)
    # before: executed — the IBAN traced to the revoked approval's note, trusted
    assert again.status is OutcomeStatus.AWAITING_APPROVAL, (again.status, again.reasons)
    assert again.approval is not None and again.approval.id != first.id  # a person asked
    assert sent == []
    assert arg["untrusted_only"] and not arg["trusted_origin"], arg
    assert {o["kind"] for o in arg["origins"]} == {"observation"}


def test_an_approved_note_not_revoked_is_still_the_persons_word(tmp_path: Path) -> None:
    """What is kept: a note on an approval that stands vouches for its value, as before
    (``test_101``): the same transfer proposed again runs."""
    again, arg, sent = _decided_then_proposed_again(tmp_path, ApprovalStatus.APPROVED, VOUCHED)
    assert again.status is OutcomeStatus.EXECUTED, (again.status, again.reasons)
    assert arg["trusted_origin"] and len(sent) == 2, (arg, sent)
