"""Gate 1's answer as a record: the :class:`RuntimeDecision`, and what is journaled with it.

The decision names every check, the policies that determined it, the policy set and pack
versions in force; the proposal as received and the decision are journaled together,
ahead of whatever the verdict leads to.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ...canonical import content_hash, iso
from ...graph.vocab import ONTOLOGY_VERSION
from ...records import RUNTIME_ACTOR, Proposal, Provenance, RuntimeDecision, Verdict
from ...redaction import SECRET_KEY
from ...storage import NewEvent
from ...storage.counting import REFUSED_AGENT
from .checks import GateResult

#: the key of a decision's payload listing the citations gate 1 did not count (absent: none)
EVIDENCE_NOT_COUNTED = "evidence_not_counted"
#: the key of a decision's payload naming the digest of each pack it was made under
#: (``id@version`` -> ``sha256:`` of the pack folder's files; absent: no pack, or a journal
#: written before it was recorded — ``tests/security/test_553``)
PACK_DIGESTS = "pack_digests"


def short_id(*parts: Any) -> str:
    """A short, stable id part derived from ``parts`` (24 hex digits of their hash)."""
    return content_hash(list(parts))[7:31]


def action_id(proposal: Proposal, gate: GateResult) -> str:
    """The action's id: from its idempotency key, or (unparseable action) the proposal."""
    if gate.idempotency_key:
        return "act:" + gate.idempotency_key.removeprefix("idem:")
    return "act:proposal:" + short_id(proposal.effective_run_id, proposal.id, proposal.attempt,
                                      *([gate.submission] if gate.submission else []))


def decide(proposal: Proposal, gate: GateResult, now: datetime, *, policy_version: str,
           pack_versions: tuple[str, ...]) -> RuntimeDecision:
    """The decision gate 1 came to, with its provenance."""
    run_id = proposal.effective_run_id
    return RuntimeDecision(
        id="dec:" + short_id(run_id, proposal.id, proposal.attempt, iso(now)),
        proposal_id=proposal.id,
        verdict=gate.verdict,
        reasons=tuple(gate.reasons),
        reason_codes=tuple(gate.codes),
        policy_results=gate.policy_results,
        required_actions=tuple(gate.required_actions),
        checks=tuple(gate.checks),
        missing_facts=tuple(gate.missing_facts),
        decided_at=now,
        granted_to=proposal.agent_id if gate.verdict is Verdict.ALLOW else None,
        policy_version=policy_version,
        pack_versions=pack_versions,
        provenance=Provenance(
            source="gate1", actor=RUNTIME_ACTOR, timestamp=now,
            policy_version=policy_version, pack_versions=pack_versions,
            ontology_version=ONTOLOGY_VERSION, input_hash=gate.input_hash or None,
            evidence_refs=proposal.evidence_refs, confidence=proposal.confidence,
            tool_ref=gate.spec.ref if gate.spec else None,
        ),
    )


#: the verdicts of gate 1 that refuse a proposal (what journals it and runs nothing, no
#: person asked): each counts in its agent's refusals
REFUSED_VERDICTS = frozenset({Verdict.DENY, Verdict.CLARIFY, Verdict.REPAIR})


def decision_events(proposal: Proposal, gate: GateResult, decision: RuntimeDecision,
                    now: datetime, *, decided: dict[str, Any] | None = None,
                    pack_digests: Mapping[str, str] | None = None) -> list[NewEvent]:
    """``proposal.received`` (claiming the proposal id) and ``decision.made``;
    ``decided``: ``decision.model_dump(mode="json")`` when the caller made it already;
    ``pack_digests``: the digest of each pack loaded (``id@version`` -> digest), journaled
    for the packs the decision names (:data:`PACK_DIGESTS`)."""
    run_id = proposal.effective_run_id
    marked: dict[str, Any] = {"submission": gate.submission} if gate.submission else {}
    # the tool's secrets as soon as the tool is known: a proposal refused for its
    # arguments' shape is marked too, so the views mask it (tests/security/test_140)
    if gate.secrets:
        marked[SECRET_KEY] = list(gate.secrets)
    # INVARIANT: a proposal gate 1 refuses counts in its agent's refusals (the usage
    # bucket ``refusals.agent``, derived from this key in the append's own transaction):
    # what ``input_limits.refusals_per_agent_per_hour`` bounds (tests/security/test_204)
    refused = ({REFUSED_AGENT: proposal.agent_id} if decision.verdict in REFUSED_VERDICTS
               else {})
    return [
        NewEvent(run_id=run_id, kind="proposal.received", subject=proposal.id,
                 actor=proposal.agent_id, at=now, idem_key=gate.claim_key,
                 payload={"proposal": proposal.model_dump(mode="json"), **marked}),
        NewEvent(run_id=run_id, kind="decision.made", subject=decision.id,
                 actor=decision.decided_by, at=now,
                 payload={"decision": decision.model_dump(mode="json") if decided is None
                          else decided,
                          "proposal_id": proposal.id,
                          "action_id": action_id(proposal, gate),
                          "action": proposal.action.model_dump(mode="json"),
                          **({"validator_findings": gate.validator_findings}
                             if gate.validator_findings else {}), **marked,
                          **({"attempt": proposal.attempt} if proposal.attempt else {}),
                          **_not_counted(gate), **refused,
                          **_digests(decision, pack_digests or {})}),
    ]


def _digests(decision: RuntimeDecision, digests: Mapping[str, str]) -> dict[str, Any]:
    """The digest of each pack the decision names, by ``id@version`` (absent: none).

    INVARIANT: a decision says which code made it — the version alone does not (a pack
    edited in place, reinstalled under its version): strict replay loads exactly these
    packs and refuses a run whose installed pack differs (``tests/security/test_553`` …
    ``test_555``)."""
    found = {ref: digests[ref] for ref in decision.pack_versions if ref in digests}
    return {PACK_DIGESTS: found} if found else {}


def _not_counted(gate: GateResult) -> dict[str, Any]:
    """The citations gate 1 did not count as evidence (absent, stale, collected by agents
    alone, for another run or another action), when there is one: the graph marks them,
    and ``why-allowed`` names as the action's evidence only the others.

    INVARIANT: without it, ``why-allowed`` of an action whose tool asks for no evidence
    named as its evidence a report collected for another run, cited and never counted
    (``tests/security/test_390``). Absent when every citation counted (or none was read):
    older journals read as before."""
    if gate.evidence is None:
        return {}
    _, stale, absent, own, elsewhere, other_action = gate.evidence
    refused = [*stale, *absent, *own, *elsewhere, *other_action]
    return {EVIDENCE_NOT_COUNTED: refused} if refused else {}
