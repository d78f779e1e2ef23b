"""An approver cannot widen their own authority by naming another scope.

Finding: a policy that asks for a person with ``@approval_scope("account_closure")``
puts that scope on the approval; an approver must hold it (or ``*``). But the decision
checked ``scope or approval.scope`` — the scope the *approver* passed won. Carol, who
may approve only within ``payments``, approved a pending ``close_account`` with
``approvals approve --scope payments`` (the API's ``{"scope": "payments"}``): the check
passed on her own scope, the approval was rewritten to ``payments`` and the irreversible
call ran. A decision may now name only the scope the approval was asked within (or none,
when the policy asked for none); naming another is refused and journaled
(``approval.refused``), and nothing runs.

What holds (checked here): without a scope argument Carol is refused the
``account_closure`` approval; an approver holding the scope (or ``*``) approves it, by
naming it or not; on an approval asked within no scope, a named scope must be held.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.records import ApprovalStatus
from tests.test_approvals import CAROL, _config, close, closes

pytestmark = pytest.mark.usefixtures("journal_backend")


@pytest.fixture
def art(home: Path) -> Iterator[Runtime]:
    (home / "config.json").write_text(_config().model_dump_json())
    runtime = Runtime(home)
    yield runtime
    runtime.close()


def _pending(rt: Runtime, pid: str) -> str:
    out = rt.submit(close(pid))
    assert out.status is OutcomeStatus.AWAITING_APPROVAL and out.approval is not None
    assert out.approval.scope == "account_closure"  # what the demo's policy asks for
    return out.approval.id


def _refusals(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events() if e.kind == "approval.refused")


@pytest.mark.parametrize("named", [None, "payments", "*"])
def test_an_approver_without_the_scope_cannot_approve_by_naming_another(
        art: Runtime, named: str | None) -> None:
    aid = _pending(art, "p1")
    with pytest.raises(ApprovalError):
        art.decide_approval(aid, approver_id=CAROL.id, token="carol",
                            status=ApprovalStatus.APPROVED, scope=named)
    a = art.approvals.get(aid).approval
    assert a.status is ApprovalStatus.PENDING and a.scope == "account_closure"
    assert closes(art.home.root) == []
    assert _refusals(art) == 1


def test_an_approver_with_the_scope_approves_within_it(art: Runtime) -> None:
    for pid, named in (("p-a", None), ("p-b", "account_closure")):
        aid = _pending(art, pid)
        a, out = art.decide_approval(aid, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                                     status=ApprovalStatus.APPROVED, scope=named)
        assert a.scope == "account_closure"
        assert out is not None and out.status is OutcomeStatus.EXECUTED
    aid = _pending(art, "p-c")
    with pytest.raises(ApprovalError, match="account_closure"):  # `*` may not rename it either
        art.decide_approval(aid, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                            status=ApprovalStatus.APPROVED, scope="payments")
    assert len(closes(art.home.root)) == 2
