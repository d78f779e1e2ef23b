"""``decisions-by-policy-version`` answers each decision once, with its proposal.

Finding (the twenty-sixth review, the README walked as an auditor): the named query
("Which decisions were taken under this policy version? Every decision recording it, with
its verdict, the proposal it evaluated …") joined ``?decision cradle:evaluates
?proposal`` — but the projection writes ``cradle:evaluates`` twice for a decision: to its
proposal and to the decision's ``cradle:Context`` (the timestamped inputs it evaluated,
as the ontology says: "a policy evaluates a context; a decision evaluates a proposal").
Each decision came back twice, once with its ``id:context/dec:…`` node as "the proposal
it evaluated": an auditor counting the decisions taken under a policy version counted
double.

Now the query asks for a ``cradle:Proposal``: one row per decision, naming its proposal.
A real runtime on a temporary home, its graph store, the query through ``cradle-kg query``.
"""

from __future__ import annotations

from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.graph.project import node

from .answers import answer
from .homes import credit


def test_each_decision_once_with_its_proposal(home: Path) -> None:
    with Runtime(home) as rt:
        done = [rt.submit(credit(f"p-{n}", amount=amount))
                for n, amount in enumerate((100, 5000))]  # one allowed, one denied
        version = done[0].decision.policy_version
    assert {o.status.value for o in done} == {"executed", "denied"}
    rows = answer(home, "decisions-by-policy-version", policyVersion=version)
    decisions = {node("decision", o.decision.id)[1:-1] for o in done}
    mine = [r for r in rows if r["decision"] in decisions]
    # before: 4 rows, two of them naming `…/id/context/dec:…` as the proposal
    assert len(mine) == 2, mine
    assert {r["proposal"] for r in mine} == {
        node("proposal", f"run:task-p-{n}/p-{n}")[1:-1] for n in range(2)}, mine
