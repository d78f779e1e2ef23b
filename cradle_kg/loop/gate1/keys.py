"""The keys gate 1 derives: a proposal's submission claim, its input hash, its idempotency key.

A proposal id is used once per run (its first submission claims a UNIQUE key in the
journal); the idempotency key that travels to the tool is derived, scoped to (agent, tool),
and never chosen inside the runtime's own namespaces.

The input hash (the action's digest: its approval's ``action_digest``, the graph's
``cradle:inputHash``) binds each argument the tool declares secret through a keyed hash:
its value is replaced, before hashing, by ``{"hmac-sha256": <hex>}``, the HMAC-SHA256 of
the value's canonical JSON under the journal's digest key
(:func:`~cradle_kg.redaction.action_digest`; the key:
:meth:`~cradle_kg.storage.Journal.digest_key`). The digest still binds the exact action,
but whoever reads it cannot test a guessed password without the key
(``tests/security/test_135``). A tool with no secret argument hashes as before.
"""

from __future__ import annotations

from collections.abc import Collection

from ...canonical import content_hash
from ...records import AuditEvent, Proposal
from ...redaction import action_digest
from ...storage import Journal
from ..context import (
    DECISION_CLAIM_PREFIX,
    PROPOSAL_CLAIM_PREFIX,
    REVOKE_CLAIM_PREFIX,
    RUN_CLAIM_PREFIX,
    TASK_CLAIM_PREFIX,
)

#: prefixes of the keys the runtime claims in the journal; an agent may not choose them
RESERVED_KEY_PREFIXES = ("idem:", "key:", PROPOSAL_CLAIM_PREFIX, "approval-once:",
                         RUN_CLAIM_PREFIX, REVOKE_CLAIM_PREFIX, DECISION_CLAIM_PREFIX,
                         TASK_CLAIM_PREFIX)


def proposal_hash(proposal: Proposal) -> str:
    """The canonical hash of a whole proposal: what "the identical proposal" means."""
    return content_hash(proposal.model_dump(mode="json"))


def submission_key(run_id: str, proposal_id: str, attempt: int) -> str:
    """The journal key the first submission of a proposal id (and attempt) in a run claims
    (UNIQUE). A new ``attempt`` is a new submission of the proposal; everything else about
    a repeated (run, id, attempt) must be identical."""
    return PROPOSAL_CLAIM_PREFIX + content_hash([run_id, proposal_id, attempt])[7:39]


def recorded_submission(journal: Journal, proposal: Proposal) -> AuditEvent | None:
    """The first submission of this proposal's id in its run, if there was one."""
    run_id = proposal.effective_run_id
    # a claim is carried by the id's own ``proposal.received`` in its run (the key is
    # derived from both: decision_events): when the run has none, there is neither a claim
    # nor a plain submission — one read for a new id, the common case, instead of two
    oldest = journal.subject_events(proposal.id, "proposal.received", limit=1,
                                    newest=False, run_id=run_id)
    if not oldest:
        return None
    claimed = journal.event_for_key(submission_key(run_id, proposal.id, proposal.attempt))
    if claimed is not None:
        return claimed
    # journals written before ids were claimed: the first plain submission of the id.
    # Plain submissions all came before the first claimed one: when the id's oldest
    # submission in the run is a claimed one, there is none (two rows decoded, not every
    # event about the id in the run — its replays, its refused reuses, its other
    # attempts, all the agent's to write: ``tests/security/test_86``)
    first = oldest[0]
    attempt = first.payload["proposal"].get("attempt", 0)
    if isinstance(attempt, int):
        claim = journal.event_for_key(submission_key(run_id, proposal.id, attempt))
        if claim is not None and claim.seq == first.seq:
            return None
    for ev in journal.events_for_subject(proposal.id, run_id=run_id):
        if (ev.kind == "proposal.received" and ev.run_id == run_id
                and "submission" not in ev.payload
                and ev.payload["proposal"].get("attempt", 0) == proposal.attempt):
            return ev
    return None


def input_hash_of(proposal: Proposal, *, secrets: Collection[str] = (),
                  key: bytes | None = None) -> str:
    """The action's digest; ``secrets`` (the tool's secret arguments) are bound through
    their HMAC under ``key`` (none given: the digest made before secrets were keyed)."""
    a = proposal.action
    return action_digest({"action_type": a.action_type, "target": a.target,
                          "arguments": a.arguments, "environment": a.environment,
                          "dry_run": a.dry_run}, secrets=secrets, key=key)


def derive_idempotency_key(proposal: Proposal, input_hash: str) -> str:
    """The key that travels to the tool, scoped to (agent, tool).

    Derived: (agent, tool, run, step, attempt, input hash). Chosen by the agent: that key
    within (agent, tool) — so no agent can pin, on its own tool, a key another agent (or
    another tool) will use, and the same chosen key on two tools is two keys.
    """
    a = proposal.action
    if a.idempotency_key:
        return "key:" + content_hash([proposal.agent_id, a.action_type, a.idempotency_key])[7:39]
    return "idem:" + content_hash(
        [proposal.agent_id, a.action_type, proposal.effective_run_id, proposal.step,
         proposal.attempt, input_hash]
    )[7:39]
