"""Gate 1 for the airline: the written policy, checked against the database before a write.

One validator for the six writes. It reads the proposal's arguments (the benchmark's),
its ``on_behalf_of`` and the customer's statements (facts whose subject is that customer and
whose ``source`` is them or the host application relaying them; a statement from anyone
else — the agent included — is never the customer's word), opens the
airline database read-only, and asks :mod:`.rules`. Reads and the hand-off pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from cradle_kg.packs.sdk import (
    HOST_FACT_PREFIX,
    Finding,
    PackContext,
    Proposal,
    ToolSpec,
    validator,
)

from . import api, rules
from .db import AirlineDB, Reader
from .tools import created_at_of, decided_key, remember_decided


def customers_word(source: str, who: str) -> bool:
    """Whether a statement about the customer ``who`` from ``source`` is their word: stated
    by them, or relayed by the host application — the chat front-end that sees the
    customer's own words, which asserts facts through a session's ``_meta``
    (``cradle-kg/facts`` on MCP and LangGraph, recorded as ``host:<session>``). Only the
    host writes a ``host:`` fact or one in the customer's name (the JSON API refuses an
    agent's, ``tests/security/test_151``; MCP over HTTP refuses facts from the agent's
    token): never the agent, never the model's arguments."""
    return source == who or source.startswith(HOST_FACT_PREFIX)


def statements(proposal: Proposal) -> tuple[dict[str, str], dict[str, str]]:
    """(what the customer said, what others said) — predicate → value."""
    said: dict[str, str] = {}
    hearsay: dict[str, str] = {}
    who = proposal.on_behalf_of
    for fact in proposal.facts:
        if not fact.predicate.startswith("airline:"):
            continue
        value = str(fact.object)
        if who and fact.subject == who and customers_word(fact.source, who):
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
        found = rules.findings(api.View(conn, created_at_of(now)), call)
    if not found:  # the tool asks the rules again, in its transaction, with this reading
        remember_decided(decided_key(ctx.home, proposal.effective_run_id, proposal.agent_id,
                                     name, args), call)
    return found
