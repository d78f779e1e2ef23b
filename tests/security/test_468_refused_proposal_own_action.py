"""A refused proposal contains an action of its own, never the one its key later ran.

Finding (the twenty-fourth review, the graph): an action's node is named by its
idempotency key (``act:<key>``), and gate 1 names the action of every proposal so — a
denied one too. Two ordinary ways led a denied proposal onto the node of an action that
ran: a credit denied during an incident freeze and submitted again (a new proposal id,
the same task, step and arguments: the same derived key) once the freeze was lifted; and
an agent pinning one ``idempotency_key`` on two different inputs (the second denied,
``was used for a different input``). In the graph the denied proposal then
``cradle:contains`` the executed action, so ``validate --all`` reported rule 6 — "action
of a denied proposal was executed" — on an honest store, any agent able to raise that
alarm at will; ``task-effects`` of the denied proposal's task listed the other task's
credit as its effect; and when the denied one was an earlier attempt of the same proposal
(checked together at commit), the commit-time integrity check aborted the second
attempt's transition *after* its credit was applied: the run failed, with a human task
"the state of the target is unknown".

Now the action of a proposal gate 1 refused (deny, clarify, repair: nothing runs under
that decision) is a node of its own, ``act:<key>/<decision>``, with its tool, target and
policies as before; the action that ran is contained by the proposals that let it run.
Projection layout 5: a store written before is rebuilt on its next sync.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.graph.bulk import validate_store
from cradle_kg.graph.shacl import load_shapes

from .answers import answer
from .homes import FREEZE, credit

pytestmark = pytest.mark.usefixtures("journal_backend")


def _conforms(rt: Runtime) -> None:
    report = validate_store(rt.graph(), load_shapes())
    # before: "rule 6: action of a denied proposal was executed ..."
    assert report.conforms, report.to_text()


def test_a_credit_denied_then_retried_after_the_freeze(home: Path) -> None:
    freeze = home / "policies" / "freeze.cedar"
    freeze.write_text(FREEZE, encoding="utf-8")
    with Runtime(home) as rt:
        assert rt.submit(credit("p-1", amount=5, task="t")).status.value == "denied"
    freeze.unlink()
    with Runtime(home) as rt:
        done = rt.submit(credit("p-2", amount=5, task="t"))
        assert done.status.value == "executed", done.reasons
        _conforms(rt)


def test_a_second_attempt_after_the_freeze_commits(home: Path) -> None:
    # the attempts of one proposal are checked together at commit: the first, denied,
    # contained the very action the second ran
    freeze = home / "policies" / "freeze.cedar"
    freeze.write_text(FREEZE, encoding="utf-8")
    first = credit("p-1", amount=5, task="t")
    first["action"]["idempotency_key"] = "k"
    with Runtime(home) as rt:
        assert rt.submit(first).status.value == "denied"
    freeze.unlink()
    with Runtime(home) as rt:
        done = rt.submit(first | {"attempt": 1})
        # before: the credit ran, then the commit check aborted it ("rule 6: action of a
        # denied proposal was executed"), the run failed with a human task "the state of
        # the target is unknown"
        assert done.status.value == "executed", done.reasons
        assert done.transition is not None and done.transition.committed_at is not None
        _conforms(rt)


def test_a_pinned_key_reused_for_another_input(home: Path) -> None:
    with Runtime(home) as rt:
        first = credit("p-1", amount=5, task="task-a")
        first["action"]["idempotency_key"] = "k1"
        done = rt.submit(first)
        assert done.status.value == "executed" and done.action is not None
        again = credit("p-2", amount=7, task="task-b")
        again["action"]["idempotency_key"] = "k1"
        refused = rt.submit(again)
        assert refused.status.value == "denied", refused
        assert "different input" in " ".join(refused.reasons)
        _conforms(rt)
    # before: task-b's denied proposal listed task-a's credit as its effect
    assert answer(home, "task-effects", task="task-b") == []
    effects = answer(home, "task-effects", task="task-a")
    assert [r["action"].rsplit("/", 1)[1] for r in effects] == [
        done.action.id.replace(":", "%3A")]


def test_a_refused_call_is_still_listed_with_its_tool_and_target(home: Path) -> None:
    freeze = home / "policies" / "freeze.cedar"
    freeze.write_text(FREEZE, encoding="utf-8")
    with Runtime(home) as rt:
        assert rt.submit(credit("p-1", amount=5, task="t")).status.value == "denied"
        rows = rt.graph().query("""
            PREFIX cradle: <https://w3id.org/cradle#>
            SELECT ?tool ?target WHERE {
              ?decision cradle:verdict cradle:Deny ; cradle:evaluates ?p ;
                        cradle:decisionFor ?action .
              ?p cradle:contains ?action .
              ?action cradle:invokes ?tool ; cradle:targets ?target ;
                      cradle:isGovernedBy ?policy . }""")
        found = {(str(r["tool"].value), str(r["target"].value)) for r in rows}
    assert found == {("https://w3id.org/cradle/id/tool/demo.ledger.credit",
                      "https://w3id.org/cradle/id/resource/ledger%3Aacct-1")}
