"""Gate 1 for the airline: the written policy, checked against the database before a write.

One validator for the six writes. It reads the proposal's arguments (the benchmark's),
its ``on_behalf_of`` and the customer's statements (facts whose ``source`` — and subject —
is that customer; a statement from anyone else is never the customer's word), opens the
airline database read-only, and asks :mod:`.rules`. Reads and the hand-off pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from cradle_kg.packs.sdk import Finding, PackContext, Proposal, ToolSpec, validator

from . import api, rules
from .db import AirlineDB, Reader
from .tools import created_at_of


def statements(proposal: Proposal) -> tuple[dict[str, str], dict[str, str]]:
    """(what the customer said, what others said) — predicate → value."""
    said: dict[str, str] = {}
    hearsay: dict[str, str] = {}
    who = proposal.on_behalf_of
    for fact in proposal.facts:
        if not fact.predicate.startswith("airline:"):
            continue
        value = str(fact.object)
        if who and fact.source == who and fact.subject == who:
            said[fact.predicate] = value
        else:
            hearsay[fact.predicate] = value
    return said, hearsay


@validator("airline.*", name="travel.airline/policy")
def policy(ctx: PackContext, proposal: Proposal, spec: ToolSpec) -> Sequence[Finding]:
    name = proposal.action.action_type.removeprefix("airline.")
    if name not in api.WRITES:
        return []
    args = spec.parse_arguments(proposal.action.arguments).model_dump(mode="json")
    said, hearsay = statements(proposal)
    with AirlineDB.of(ctx).reading() as conn:  # one read-only connection for every rule
        now = Reader(conn).now()  # the domain clock, read once for the rules and the view
        call = rules.Call(tool=name, args=args, on_behalf_of=proposal.on_behalf_of, said=said,
                          hearsay=hearsay, now=now)
        return rules.findings(api.View(conn, created_at_of(now)), call)
