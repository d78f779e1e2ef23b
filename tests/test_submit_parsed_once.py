"""A runtime that parsed a proposal does not check it a second time in ``submit`` — only
the very object its ``parse_proposal`` returned (an entry point that parses first, to claim
the run before anything is journaled: ``GovernedSession``); any other ``Proposal`` is
checked as before."""

from __future__ import annotations

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import ProposalError
from cradle_kg.records import OutcomeStatus, Proposal

from .conftest import proposal


def test_submit_checks_a_proposal_this_runtime_did_not_parse(rt: Runtime) -> None:
    raw = proposal("act:mine", "demo.ledger.balance", {"account": "acct-1"})
    built = Proposal.model_validate(raw)  # not through `parse_proposal`: checked in submit
    with pytest.raises(ProposalError, match="namespace"):
        rt.submit(built)


def test_a_parsed_proposal_is_submitted_once_checked(rt: Runtime,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import cradle_kg.loop.runtime as runtime_module

    parsed = rt.parse_proposal(proposal("p-1", "demo.ledger.balance", {"account": "acct-1"}))
    calls: list[object] = []
    real = runtime_module.parse_proposal
    monkeypatch.setattr(runtime_module, "parse_proposal",
                        lambda raw, limits: calls.append(raw) or real(raw, limits))
    assert rt.submit(parsed).status is OutcomeStatus.EXECUTED
    assert calls == []
    # an equal proposal that is another object is checked again
    other = Proposal.model_validate(parsed.model_dump(mode="json"))
    rt.submit(other)
    assert calls == [other]
