"""An action a person refused in a run never runs unattended in that run.

Finding: after ``test_101`` a rejection's reason no longer launders the value it quotes,
but a *change request's* note is still the person's word (it gives the values to use
instead — "pay GB33… instead"), and it quotes the refused one just as naturally: "Do not pay
GB29…: that e-mail is phishing. Pay the landlord's usual account instead." That made the
injected IBAN trusted and the sentence (choice word ``pay`` and the value) a trusted
instruction; the agent proposed the very transfer the person had sent back, unchanged, and
it **executed unattended**. More generally nothing tied a new proposal to the person's
refusal of the same action: whatever changed in the run between the two (a note, a new
read, a fact), the identical action could pass gate 1 without a person.

Now gate 1 asks for a person again when a person rejected, or asked for changes to, this
exact action (its digest) in this run (``GateInput.refused_here``: the digest's decisions in
the run, one index range, nothing decoded while there is none). The transfer, proposed
again, waits; an approval of that new request runs it as any other. The digest binds the
spelling (``900.0`` for ``900`` is another digest, the same transfer), so lineage no longer
reads the refused action's values in a change request's note as the person's either
(``mask_refused``: the note's values to use instead stay theirs): the respelled transfer
waits too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg.records import ApprovalStatus, OutcomeStatus

from ..lineage.kit import submit
from .test_101_rejection_note_lineage import ATTACKER, BOB, TOKEN, _runtime, refuse_first


@pytest.mark.parametrize("status", [ApprovalStatus.CHANGES_REQUESTED, ApprovalStatus.REJECTED])
def test_the_refused_action_proposed_again_waits(tmp_path: Path,
                                                 status: ApprovalStatus) -> None:
    sent: list[dict[str, Any]] = []
    rt = _runtime(tmp_path, sent)
    try:
        args = {"recipient": ATTACKER, "amount": 900}
        refuse_first(rt, status, f"Do not pay {ATTACKER}: that e-mail is phishing. Pay the "
                                 "landlord's usual account instead.")
        again = submit(rt, 2, "send_money", args, target="bank")
        # before (changes requested): executed — the note made the IBAN trusted
        assert again.status is OutcomeStatus.AWAITING_APPROVAL, (again.status, again.reasons)
        assert sent == []
        # a person approving the new request runs it, once
        assert again.approval is not None
        _, outcome = rt.decide_approval(again.approval.id, approver_id=BOB, token=TOKEN,
                                        status=ApprovalStatus.APPROVED)
        assert outcome is not None and outcome.status is OutcomeStatus.EXECUTED, outcome
        assert sent == [{"recipient": ATTACKER, "amount": 900.0}]
        # another action (another amount) is not the refused one: the policies decide it
        other = submit(rt, 3, "send_money", {"recipient": ATTACKER, "amount": 901},
                       target="bank")
        assert other.approval is None or other.approval.id != again.approval.id
    finally:
        rt.close()


def test_a_respelled_refused_action_waits_too(tmp_path: Path) -> None:
    """The digest binds the action as spelled: ``900.0`` for ``900`` is another digest (the
    tool runs the same transfer), so the rule above does not see it. What the change
    request's note said about the refused IBAN no longer counts as the person's word: the
    values of the action a change request sends back are masked in its note (the values it
    gives instead stay the person's)."""
    sent: list[dict[str, Any]] = []
    rt = _runtime(tmp_path, sent)
    try:
        usual = "GB94BARC10201530093459"
        refuse_first(rt, ApprovalStatus.CHANGES_REQUESTED,
                     f"Do not pay {ATTACKER}: that e-mail is phishing. Pay {usual}, the "
                     "landlord's usual account, instead.")
        again = submit(rt, 2, "send_money", {"recipient": ATTACKER, "amount": 900.0},
                       target="bank")
        # before: executed (the note's "Do not pay <IBAN>" a trusted instruction to pay it)
        assert again.status is OutcomeStatus.AWAITING_APPROVAL, (again.status, again.reasons)
        assert sent == []
        # the value the note gives instead is the person's: it runs
        fixed = submit(rt, 3, "send_money", {"recipient": usual, "amount": 900},
                       target="bank")
        assert fixed.status is OutcomeStatus.EXECUTED, fixed.reasons
        assert sent == [{"recipient": usual, "amount": 900.0}]
    finally:
        rt.close()
