"""A pack's validator or invariant that answers what the journal cannot hold decides; it
never crashes a call.

Finding: gate 1 took a domain validator's findings as they came, and gate 2 a domain
invariant's messages; both were checked only on the way to the journal, outside the
fail-closed guard each gate puts around a check. A finding with ``message=None`` (or a
number for ``code``) raised pydantic's ``ValidationError`` out of ``submit``; a lone
surrogate in any of its texts — a file name the validator read from disk — or in the text
of an exception a validator raised, raised ``UnicodeEncodeError``, and a ``NaN`` in its
``data`` ``ValueError``: a traceback, no decision. An invariant answering ``[None]`` (or a
number) raised ``TypeError`` out of ``"; ".join``, and a message with a lone surrogate
``UnicodeEncodeError``, both *after the tool ran* — intent and observation journaled, no
verification, no outcome; an invariant answering ``""`` (a str, not a list of messages)
read as "holds" and the credit was verified. What ``test_471`` closed for a verifier's
report and exceptions in gate 2 held for the pack's other two hooks and for gate 1.

Now: each answer is held where the hook is asked (``gate1.findings.answered``,
``gate2._broken``): findings of the wrong type, a verdict a finding may not say, texts or
data the journal's rules refuse — the check failed, the proposal denied; an invariant's
answer that is not a list of ``str`` — the invariant broken (``verification_failed``); a
lone surrogate in an invariant's message or an exception's text is journaled as its
escape. Every case ends with its decision and outcome journaled.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.loop.gate1.findings import Finding
from cradle_kg.records import OutcomeStatus, Verdict, VerificationStatus


def _credit(pid: str) -> dict[str, Any]:
    return {"id": pid, "task_id": "task-" + pid, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-f",
                       "arguments": {"account": "acct-f", "amount": 3}}}


def _raises(*_: object) -> Any:
    raise ValueError("cannot read caf\udce9.pdf")  # a file name not UTF-8 on disk


VALIDATORS: dict[str, Callable[..., Any]] = {
    "message-none": lambda p, s: [Finding(code="c", message=None)],  # type: ignore[arg-type]
    "code-number": lambda p, s: [Finding(code=5, message="m")],  # type: ignore[arg-type]
    "message-surrogate": lambda p, s: [Finding(code="c", message="caf\udce9.pdf unreadable")],
    "missing-surrogate": lambda p, s: [Finding(code="c", message="m", verdict=Verdict.CLARIFY,
                                               missing_facts=("caf\udce9",))],
    "data-nan": lambda p, s: [Finding(code="c", message="m", data=(("k", float("nan")),))],
    "raises-surrogate": _raises,
}


@pytest.mark.parametrize("name", sorted(VALIDATORS))
def test_a_validator_answer_the_journal_refuses_denies(tmp_path: Path, name: str) -> None:
    root = tmp_path / "home"
    prepare_home(root)
    with Runtime(root) as rt:
        rt.register_validator("demo.ledger.*", VALIDATORS[name], name="acme.check")
        # before: ValidationError / UnicodeEncodeError / ValueError raised out of submit
        out = rt.submit(_credit("p-" + name))
        assert out.status is OutcomeStatus.DENIED, out
        assert out.decision is not None
        assert out.decision.reason_codes == ("domain_preconditions_error",)
        kinds = [e.kind for e in rt.journal.events()]
        assert "decision.made" in kinds and kinds[-1] == "run.outcome", kinds


INVARIANTS: dict[str, Callable[..., Any]] = {
    "none-among": lambda a, o: [None],
    "number-among": lambda a, o: [7],
    "bare-empty-str": lambda a, o: "",
    "surrogate": lambda a, o: ["balance of caf\udce9 not updated"],
}


@pytest.mark.parametrize("name", sorted(INVARIANTS))
def test_an_invariant_answer_the_journal_refuses_fails_verification(
        tmp_path: Path, name: str) -> None:
    root = tmp_path / "home"
    prepare_home(root)
    with Runtime(root) as rt:
        rt.register_invariant("demo.ledger.*", INVARIANTS[name], name="acme.holds")
        # before: TypeError / UnicodeEncodeError out of submit after the credit ran, or
        # (a bare "") EXECUTED, the invariant read as holding
        out = rt.submit(_credit("p-" + name))
        assert out.status is OutcomeStatus.VERIFICATION_FAILED, out
        assert out.verification is not None
        check = next(c for c in out.verification.checks if c.name == "domain_invariants")
        assert check.status is VerificationStatus.FAILED
        kinds = [e.kind for e in rt.journal.events()]
        assert "verification.recorded" in kinds and kinds[-1] == "run.outcome", kinds


def test_well_formed_answers_decide_as_before(tmp_path: Path) -> None:
    root = tmp_path / "home"
    prepare_home(root)
    with Runtime(root) as rt:
        rt.register_validator("demo.ledger.*", lambda p, s: [Finding(
            code="need_reference", message="which invoice?", verdict=Verdict.CLARIFY,
            missing_facts=("invoice",), data=(("candidates", ["a", 1]),))], name="acme.ask")
        out = rt.submit(_credit("p-ask"))
        assert out.status is OutcomeStatus.NEEDS_CLARIFICATION
        assert out.decision is not None and out.decision.reason_codes == ("need_reference",)
    root = tmp_path / "other"
    prepare_home(root)
    with Runtime(root) as rt:
        rt.register_invariant("demo.ledger.*", lambda a, o: (m for m in ()), name="acme.ok")
        assert rt.submit(_credit("p-ok")).status is OutcomeStatus.EXECUTED
