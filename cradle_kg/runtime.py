"""The governed execution loop, start to end (§5 of the paper).

    Proposal → Gate 1 → Decision → [HumanApproval] → Tool Gateway → Observation
             → Gate 2 → Verification → StateTransition committed | aborted → Outcome

The runtime is the only writer of the journal. Everything it knows — runs, approvals,
usage against limits, recorded outcomes — it reads back from the journal, so a process
that restarts picks up exactly where the last one stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .approval_flow import ApprovalFlow
from .approvals import ApprovalBook
from .canonical import content_hash, iso
from .config import RuntimeConfig, load_config
from .errors import ApprovalError, GraphStoreError, JournalError
from .escalation import human_task_event, repairs_in_run
from .evidence import EvidenceStore
from .gates.post import DomainInvariant, Gate2, InvariantBinding
from .gates.pre import DomainValidator, Gate1, GateInput, GateResult, ValidatorBinding
from .gateway import Gateway, KeyAlreadyClaimed, crashpoint
from .graph.integrity import IntegrityChecker
from .graph.store import GraphStore
from .home import Home, resolve_home
from .journal import IdempotencyKeyTaken, Journal, NewEvent
from .packs.loader import Pack
from .packs.registration import prepare_pack
from .packs.registry import PackRegistry
from .plans import PlanOutcome, run_plan
from .policy import PolicyEngine, read_sources
from .proposals import parse_proposal
from .records import (
    RUNTIME_ACTOR,
    Action,
    ApprovalStatus,
    AuditEvent,
    HumanApproval,
    IdempotencyClass,
    Outcome,
    OutcomeStatus,
    Plan,
    Proposal,
    Provenance,
    RuntimeDecision,
    StateTransition,
    Verdict,
    VerificationResult,
    VerificationStatus,
)
from .recovery import Recovery, RecoveryReport, WorkerLease
from .settlement import Settlement
from .tools import LookupFunction, ToolCall, ToolFunction, ToolRegistry, ToolSpec
from .verifiers import VerifierFunction, VerifierRegistry, VerifierReport

ONTOLOGY_VERSION = "0.1.0"
#: calls of a tool that raised, with the same key, when its idempotency class allows it
TOOL_RETRY_LIMIT = 2
_RETRYABLE = (IdempotencyClass.KEYED, IdempotencyClass.NATURAL)

Clock = Callable[[], datetime]
#: called with (run_id, events about to commit); returns reasons to abort, if any
CommitHook = Callable[[str, Sequence[NewEvent]], Sequence[str]]
AppendListener = Callable[[Sequence[AuditEvent]], None]

_VERDICT_STATUS = {
    Verdict.DENY: OutcomeStatus.DENIED,
    Verdict.CLARIFY: OutcomeStatus.NEEDS_CLARIFICATION,
    Verdict.REPAIR: OutcomeStatus.REPAIR,
    Verdict.REQUIRE_APPROVAL: OutcomeStatus.AWAITING_APPROVAL,
}
_VERIFICATION_STATUS = {
    VerificationStatus.VERIFIED: OutcomeStatus.EXECUTED,
    VerificationStatus.FAILED: OutcomeStatus.VERIFICATION_FAILED,
    VerificationStatus.INCONCLUSIVE: OutcomeStatus.INCONCLUSIVE,
}


#: a submission that loses the race for its proposal id is evaluated again, this often
_CLAIM_ATTEMPTS = 3
_CLAIM_PREFIX = "proposal:"


class _IdClaimed(Exception):
    """Internal signal: another submission claimed this proposal id in its run first."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _short(*parts: Any) -> str:
    return content_hash(list(parts))[7:31]


def _report_record(report: VerifierReport | None) -> dict[str, Any] | None:
    """A verifier's raw report as journaled (read by :mod:`cradle_kg.workflow.sandbox`)."""
    if report is None:
        return None
    return {"checks": [c.model_dump(mode="json") for c in report.checks],
            "read_at": iso(report.read_at), "source": report.source}


def _approval_was_needed(gate: GateResult) -> bool:
    """Gate 1 allowed this proposal because a human approval covered it."""
    return any(c.check in ("approval", "risk") and c.reasons
               and c.reasons[0].startswith("a valid human approval") for c in gate.checks)


class Runtime(Settlement, ApprovalFlow):
    """One governed runtime over one home. Thread-safe for ``submit``."""

    def __init__(self, home: str | Path | None = None, *, config: RuntimeConfig | None = None,
                 policy_paths: Sequence[Path] = (), clock: Clock | None = None,
                 load_plugins: bool = True, integrity: bool = True,
                 graph_sync: bool = True, recover: bool = True) -> None:
        self.home = Home(resolve_home(home))
        self.home.root.mkdir(parents=True, exist_ok=True)
        #: held for the life of this runtime; recovery leaves the intents of a live lease alone
        self.lease = WorkerLease(self.home.root / "workers")
        self.config = config if config is not None else load_config(self.home.config)
        self.clock: Clock = clock or _utcnow
        self.journal = Journal(self.home.journal)
        self.evidence = EvidenceStore(self.home.evidence)
        self.tools = ToolRegistry()
        self.verifiers = VerifierRegistry()
        self.validators: list[ValidatorBinding] = []
        self.invariants: list[InvariantBinding] = []
        self.pack_versions: list[str] = []
        self.commit_hooks: list[CommitHook] = []
        self.listeners: list[AppendListener] = []
        self.approvals = ApprovalBook(self.journal, self.config)
        #: (path, pack id or None for the home's own) of every policy file or folder in force
        self._policy_paths: list[tuple[Path, str | None]] = [
            (p, None) for p in (self.home.policies, *policy_paths)]
        self.policies = self._policy_engine(self._policy_paths)
        self.gateway = Gateway(self.tools, append=self._append, clock=self.clock)
        self.gate2 = Gate2(verifiers=self.verifiers, invariants=self.invariants,
                           max_read_age=timedelta(
                               seconds=self.config.verification_max_age_seconds))
        self.integrity: IntegrityChecker | None = None
        if integrity:
            # INVARIANT: the integrity rules are checked before every commit (fail closed)
            self.integrity = IntegrityChecker(self.journal)
            self.commit_hooks.append(self.integrity.check)
            self.listeners.append(self.integrity.on_append)
        self._activation_seen: tuple[str, int] | None = None
        self._graph_sync = graph_sync
        self._graph: GraphStore | None = None
        self._graph_unavailable = False
        self._graph_lock = threading.Lock()
        if load_plugins:
            try:
                if self.config.packs:
                    registry = PackRegistry.discover(self.home.root)
                    for ref in self.config.packs:
                        self.load_pack(registry.get(ref))
            except BaseException:
                self.close()  # a refused pack leaves no lease or handle behind
                raise
        # INVARIANT: dangling intents are reconciled before this runtime does anything else
        self.recovery: RecoveryReport | None = self.recover() if recover else None

    # --- registration ---------------------------------------------------------

    def register_tool(self, spec: ToolSpec, fn: ToolFunction, *,
                      lookup: LookupFunction | None = None) -> None:
        self.tools.register(spec, fn, lookup=lookup)

    def register_verifier(self, verifier_id: str, fn: VerifierFunction) -> None:
        self.verifiers.register(verifier_id, fn)

    def register_validator(self, tool_pattern: str, fn: DomainValidator, *, name: str,
                           pack: str | None = None) -> None:
        self.validators.append(ValidatorBinding(tool_pattern, fn, name, pack))

    def register_invariant(self, tool_pattern: str, fn: DomainInvariant, *, name: str) -> None:
        self.invariants.append(InvariantBinding(tool_pattern, fn, name))

    def configure(self, config: RuntimeConfig) -> None:
        """Replace the configuration (identities, permissions, approvers, limits) in force.

        For an embedding that sets up its identities after the runtime is built — a pack's
        example runner, a demo. Later decisions and approvals read the new configuration.
        """
        self.config = config
        self.approvals.config = config
        self.gate2.max_read_age = timedelta(seconds=config.verification_max_age_seconds)

    @staticmethod
    def _policy_engine(paths: Sequence[tuple[Path, str | None]]) -> PolicyEngine:
        return PolicyEngine(source for path, namespace in paths if path.exists()
                            for source in read_sources([path], namespace=namespace))

    def add_policy_paths(self, paths: Sequence[Path], *, namespace: str | None = None) -> None:
        """Put more policies in force: the home's own (``namespace`` None) or a pack's.

        Atomic: when the new set is refused (a parse error, a duplicate id), the set in
        force stays as it was.
        """
        wanted = [*self._policy_paths, *((p, namespace) for p in paths)]
        self.policies = self._policy_engine(wanted)
        self._policy_paths = wanted

    def load_pack(self, pack: Pack) -> None:
        """Plug a domain pack in: its policies, its version on every decision, and the
        tools, verifiers, validators and invariants its manifest names.

        TRUST: this imports the pack's own Python with this process's privileges — a pack
        is trusted code, like a pip-installed package. Its policies are cited as
        ``<pack-id>/<id>``, so they can never pass for the home's.
        """
        if pack.ref in self.pack_versions:
            return
        prepared = prepare_pack(pack, home=self.home.root, clock=self.clock)
        if pack.policy_files():
            self.add_policy_paths(pack.policy_files(), namespace=pack.id)
        self.pack_versions.append(pack.ref)
        prepared.register(self)

    def graph(self) -> GraphStore | None:
        """The home's graph store, opened on first use; None when another process holds it."""
        if self._graph is None and not self._graph_unavailable:
            try:
                self._graph = GraphStore(self.home.graph)
            except GraphStoreError:  # busy (another process) or unreadable: catch up later
                self._graph_unavailable = True
        return self._graph

    def sync_graph(self) -> int:
        """Bring the graph up to the journal's head; the journal stays the truth."""
        with self._graph_lock:
            store = self.graph()
            return store.sync(self.journal) if store is not None else 0

    def close(self) -> None:
        if self._graph is not None:
            self._graph.close()
            self._graph = None
        self.journal.close()
        self.lease.release()

    def recover(self) -> RecoveryReport:
        """Reconcile every intent without its outcome (see :mod:`cradle_kg.recovery`).

        Tools registered after the runtime was built are not known to the pass that runs
        at start: their intents are reported ``deferred`` until ``recover()`` runs again.
        """
        return Recovery(self).run()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the journal ----------------------------------------------------------

    def _append(self, events: Sequence[NewEvent]) -> list[AuditEvent]:
        try:
            written = self.journal.append(events)
        except IdempotencyKeyTaken as taken:
            if taken.key.startswith(_CLAIM_PREFIX):
                raise _IdClaimed(taken.key) from taken
            raise
        for listener in self.listeners:
            listener(written)
        return written

    def add_evidence(self, data: bytes, *, kind: str, collector: str,
                     run_id: str = "evidence") -> str:
        """Store evidence content-addressed and journal when it was collected."""
        ref = self.evidence.put(data)
        self._append([NewEvent(run_id=run_id, kind="evidence.collected", subject=ref,
                               actor=collector, at=self.clock(),
                               payload={"ref": ref, "kind": kind, "bytes": len(data)})])
        return ref

    def _evidence_collected_at(self, ref: str) -> datetime | None:
        events = [e for e in self.journal.events_for_subject(ref)
                  if e.kind == "evidence.collected"]
        return events[-1].at if events else None

    def _activate_policies(self, run_id: str, now: datetime) -> None:
        """Journal the policy set in force (texts kept as evidence) whenever it changes.

        Compared with the journal's latest activation, not with this process's memory: when
        another process switched to other policies and back, the switch back is recorded too,
        so "which policy version was in force at time T" has one answer.
        """
        version = self.policies.version
        subject = "policyset:" + version
        seen = (version, self.journal.data_version())
        if self._activation_seen == seen:  # nobody else wrote since we checked
            return
        latest = self.journal.last_of_kind("policyset.activated")
        if latest is None or latest.subject != subject:
            sources = [{"name": s.name, "ref": self.evidence.put(s.text.encode("utf-8")),
                        **({"namespace": s.namespace} if s.namespace is not None else {})}
                       for s in self.policies.sources]
            self._append([NewEvent(run_id=run_id, kind="policyset.activated", subject=subject,
                                   actor=RUNTIME_ACTOR, at=now,
                                   payload={"version": version, "sources": sources,
                                            "policy_ids": self.policies.policy_ids(),
                                            "packs": list(self.pack_versions)})])
        self._activation_seen = (version, self.journal.data_version())

    # --- submit ---------------------------------------------------------------

    def parse_proposal(self, raw: Proposal | dict[str, Any]) -> Proposal:
        """A proposal within this home's input limits, or a one-line :class:`ProposalError`.

        Nothing is journaled before this returns: an oversized, malformed or non-JSON
        proposal (NaN, lone surrogates, runaway nesting) never reaches the journal.
        """
        return parse_proposal(raw, self.config.input_limits)

    def submit(self, raw: Proposal | dict[str, Any]) -> Outcome:
        """Run one proposal through the whole loop and return how it ended."""
        outcome = self._submit(raw)
        if self._graph_sync:
            self.sync_graph()
        return outcome

    def _submit(self, raw: Proposal | dict[str, Any]) -> Outcome:
        proposal = self.parse_proposal(raw)
        # a submission that lost the race for its id to another process is evaluated again:
        # it is now the identical proposal (recorded outcome) or a reused id (denied)
        for _ in range(_CLAIM_ATTEMPTS):
            try:
                return self._submit_once(proposal)
            except _IdClaimed:
                continue
        raise JournalError(f"proposal `{proposal.id}`: its id is contended; submit it again")

    def _submit_once(self, proposal: Proposal) -> Outcome:
        now = self.clock()
        run_id = proposal.effective_run_id
        self._activate_policies(run_id, now)
        gate = Gate1(self._gate_input(now, run_id=run_id)).run(proposal)
        if gate.resubmission:
            recorded = self._recorded_final(proposal)
            if recorded is not None:
                return recorded
        decision = self._decision(proposal, gate, now)
        marked: dict[str, Any] = {"submission": gate.submission} if gate.submission else {}
        base = [
            NewEvent(run_id=run_id, kind="proposal.received", subject=proposal.id,
                     actor=proposal.agent_id, at=now, idem_key=gate.claim_key,
                     payload={"proposal": proposal.model_dump(mode="json"), **marked}),
            NewEvent(run_id=run_id, kind="decision.made", subject=decision.id,
                     actor=decision.decided_by, at=now,
                     payload={"decision": decision.model_dump(mode="json"),
                              "proposal_id": proposal.id,
                              "action_id": self._action_id(proposal, gate),
                              "action": proposal.action.model_dump(mode="json"),
                              **({"validator_findings": gate.validator_findings}
                                 if gate.validator_findings else {}), **marked,
                              **({"attempt": proposal.attempt} if proposal.attempt else {})}),
        ]
        if gate.recorded_intent_seq is not None and decision.verdict in (
                Verdict.ALLOW, Verdict.REQUIRE_APPROVAL):
            return self._replayed(proposal, gate, decision, base)
        if decision.verdict is Verdict.REQUIRE_APPROVAL:
            return self._await_approval(proposal, gate, decision, base, now)
        if decision.verdict is Verdict.REPAIR:
            return self._repair(proposal, decision, base, now)
        if decision.verdict is not Verdict.ALLOW:
            outcome = Outcome(run_id=run_id, proposal_id=proposal.id,
                              status=_VERDICT_STATUS[decision.verdict], decision=decision,
                              reasons=decision.reasons)
            self._append([*base, self._outcome_event(outcome, proposal.id,
                                                     submission=gate.submission)])
            return outcome
        return self._execute(proposal, gate, decision, base, now)

    def _recorded_final(self, proposal: Proposal) -> Outcome | None:
        """The identical proposal again: its recorded outcome, once it has a final one.

        An outcome still waiting (for an approval, or for another submission holding the
        key) is not final: the proposal goes through the loop again, as it always did.
        """
        event = self.journal.latest_outcome(proposal.effective_run_id, proposal.id)
        if event is None:
            return None
        recorded = Outcome.model_validate(event.payload["outcome"])
        if recorded.status in (OutcomeStatus.AWAITING_APPROVAL, OutcomeStatus.IN_PROGRESS):
            return None
        self._append([NewEvent(
            run_id=proposal.effective_run_id, kind="proposal.replayed", subject=proposal.id,
            actor=proposal.agent_id, at=self.clock(),
            payload={"proposal_id": proposal.id, "attempt": proposal.attempt,
                     "outcome_seq": event.seq, "status": str(recorded.status)})])
        return recorded.model_copy(update={"replayed": True})

    def _gate_input(self, now: datetime, *, run_id: str) -> GateInput:
        return GateInput(
            config=self.config, tools=self.tools, policies=self.policies, journal=self.journal,
            validators=self.validators, pack_versions=tuple(self.pack_versions),
            evidence_exists=self.evidence.exists,
            evidence_collected_at=self._evidence_collected_at,
            approval_available=lambda d, t, who: self.approvals.usable(
                d, t, who, run_id=run_id,
                also_excluded=self._excluded_for_agent(who)) is not None,
            now=now,
        )

    def _excluded_for_agent(self, agent_id: str) -> set[str]:
        agent = self.config.agent(agent_id)
        return {agent_id, *([agent.acts_for] if agent and agent.acts_for else [])}

    def _decision(self, proposal: Proposal, gate: GateResult, now: datetime) -> RuntimeDecision:
        run_id = proposal.effective_run_id
        return RuntimeDecision(
            id="dec:" + _short(run_id, proposal.id, proposal.attempt, iso(now)),
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
            policy_version=self.policies.version,
            pack_versions=tuple(self.pack_versions),
            provenance=Provenance(
                source="gate1", actor=RUNTIME_ACTOR, timestamp=now,
                policy_version=self.policies.version, pack_versions=tuple(self.pack_versions),
                ontology_version=ONTOLOGY_VERSION, input_hash=gate.input_hash or None,
                evidence_refs=proposal.evidence_refs, confidence=proposal.confidence,
                tool_ref=gate.spec.ref if gate.spec else None,
            ),
        )

    @staticmethod
    def _action_id(proposal: Proposal, gate: GateResult) -> str:
        """The action's id: from its idempotency key, or (unparseable action) the proposal."""
        if gate.idempotency_key:
            return "act:" + gate.idempotency_key.removeprefix("idem:")
        return "act:proposal:" + _short(proposal.effective_run_id, proposal.id,
                                        proposal.attempt, *([gate.submission]
                                                            if gate.submission else []))

    def _repair(self, proposal: Proposal, decision: RuntimeDecision, base: list[NewEvent],
                now: datetime) -> Outcome:
        """The proposal goes back with its reasons — until the run's repair budget is spent."""
        run_id = proposal.effective_run_id
        used = repairs_in_run(self.journal, run_id)
        if used < self.config.repair_budget:
            outcome = Outcome(run_id=run_id, proposal_id=proposal.id,
                              status=OutcomeStatus.REPAIR, decision=decision,
                              reasons=(*decision.reasons,
                                       f"repair {used + 1} of {self.config.repair_budget}"))
            self._append([*base, self._outcome_event(outcome, proposal.id)])
            return outcome
        reason = (f"repair budget of {self.config.repair_budget} exhausted in run `{run_id}`: "
                  "a human takes over")
        task = human_task_event(run_id=run_id, subject=proposal.id,
                                code="repair_budget_exhausted", reason=reason,
                                actor=RUNTIME_ACTOR, at=now,
                                details={"proposal_id": proposal.id,
                                         "last_reasons": list(decision.reasons)})
        outcome = Outcome(run_id=run_id, proposal_id=proposal.id,
                          status=OutcomeStatus.ESCALATED, decision=decision,
                          reasons=(*decision.reasons, f"escalated: human task "
                                   f"`{task.payload['task_id']}`: {reason}"))
        self._append([*base, task, self._outcome_event(outcome, proposal.id)])
        return outcome

    @staticmethod
    def _outcome_event(outcome: Outcome, subject: str, *, reconciled: bool = False,
                       at: datetime | None = None, submission: str | None = None) -> NewEvent:
        payload: dict[str, Any] = {"outcome": outcome.model_dump(mode="json")}
        if reconciled:
            payload["reconciled"] = True
        if submission:
            payload["submission"] = submission
        return NewEvent(run_id=outcome.run_id, kind="run.outcome", subject=subject,
                        actor=RUNTIME_ACTOR, at=at or (outcome.decision.decided_at
                                                       if outcome.decision else _utcnow()),
                        payload=payload)

    def _action(self, proposal: Proposal, gate: GateResult, now: datetime,
                executed: bool) -> Action:
        assert gate.spec is not None
        a = proposal.action
        return Action(
            id=self._action_id(proposal, gate),
            proposal_id=proposal.id, action_type=a.action_type, target=a.target,
            arguments=a.arguments, side_effect_class=gate.spec.side_effect_class,
            idempotency_key=gate.idempotency_key, risk_level=gate.risk,
            environment=a.environment, input_hash=gate.input_hash,
            executed_by=proposal.agent_id if executed else None,
            executed_at=now if executed else None,
            provenance=Provenance(source="gateway", actor=proposal.agent_id, timestamp=now,
                                  tool_ref=gate.spec.ref, policy_version=self.policies.version,
                                  pack_versions=tuple(self.pack_versions),
                                  input_hash=gate.input_hash),
        )

    def _replayed(self, proposal: Proposal, gate: GateResult, decision: RuntimeDecision,
                  base: list[NewEvent]) -> Outcome:
        action = self._action(proposal, gate, decision.decided_at, executed=False)
        recorded = self.recorded_outcome(action.id)
        self._append([*base, NewEvent(
            run_id=proposal.effective_run_id, kind="action.replayed", subject=action.id,
            actor=RUNTIME_ACTOR, at=decision.decided_at,
            payload={"idempotency_key": gate.idempotency_key, "decision_id": decision.id,
                     "recorded": recorded is not None})])
        if recorded is None:
            return Outcome(run_id=proposal.effective_run_id, proposal_id=proposal.id,
                           status=OutcomeStatus.IN_PROGRESS, decision=decision, replayed=True,
                           reasons=(f"another submission holds key `{gate.idempotency_key}` "
                                    "and has not finished",))
        return recorded.model_copy(update={"replayed": True})

    def recorded_outcome(self, action_id: str) -> Outcome | None:
        for event in reversed(self.journal.events_for_subject(action_id)):
            if event.kind == "run.outcome":
                return Outcome.model_validate(event.payload["outcome"])
        return None

    def _await_approval(self, proposal: Proposal, gate: GateResult, decision: RuntimeDecision,
                        base: list[NewEvent], now: datetime) -> Outcome:
        agent = self.config.agent(proposal.agent_id)
        excluded = sorted({proposal.agent_id, *(x for x in (
            agent.acts_for if agent else None, proposal.on_behalf_of) if x)})
        # INVARIANT: a pending approval belongs to its run and its proposal; another run
        # (or proposal) asking for the same action gets one of its own, in the inbox
        pending = [st for st in self.approvals.for_digest(gate.action_digest)
                   if st.approval.status is ApprovalStatus.PENDING
                   and st.approval.run_id == proposal.effective_run_id
                   and st.approval.proposal_id == proposal.id]
        approval = pending[0].approval if pending else HumanApproval(
            id="apr:" + _short(decision.id, gate.action_digest),
            decision_id=decision.id, proposal_id=proposal.id,
            run_id=proposal.effective_run_id, action_digest=gate.action_digest,
            requested_by=proposal.agent_id, requested_at=now, scope=gate.approval_scope,
        )
        events = list(base)
        if not pending:
            events.append(NewEvent(
                run_id=approval.run_id, kind="approval.requested",
                subject="approval:" + gate.action_digest, actor=RUNTIME_ACTOR, at=now,
                payload={"approval": approval.model_dump(mode="json"), "excluded": excluded,
                         "proposal": proposal.model_dump(mode="json")}))
        outcome = Outcome(run_id=proposal.effective_run_id, proposal_id=proposal.id,
                          status=OutcomeStatus.AWAITING_APPROVAL, decision=decision,
                          approval=approval, reasons=decision.reasons or (
                              "a human approval of this exact action is required",))
        events.append(self._outcome_event(outcome, proposal.id))
        self._append(events)
        return outcome

    def _execute(self, proposal: Proposal, gate: GateResult, decision: RuntimeDecision,
                 base: list[NewEvent], now: datetime) -> Outcome:
        assert gate.spec is not None and gate.arguments is not None
        spec, run_id = gate.spec, proposal.effective_run_id
        action = self._action(proposal, gate, now, executed=True)
        before = list(base)
        approval = self.approvals.usable(gate.action_digest, now, proposal.agent_id,
                                         run_id=run_id, also_excluded=self._excluded(proposal))
        if approval is None and _approval_was_needed(gate):
            # the approval gate 1 saw was consumed or expired since: ask again
            return self._await_approval(proposal, gate, decision, base, now)
        if approval is not None and approval.once:
            before.append(NewEvent(
                run_id=run_id, kind="approval.consumed",
                subject="approval:" + gate.action_digest, actor=proposal.agent_id, at=now,
                payload={"approval_id": approval.id, "action_id": action.id},
                idem_key="approval-once:" + approval.id))
        agent = self.config.agent(proposal.agent_id)
        intent = NewEvent(
            run_id=run_id, kind="action.intent", subject=action.id, actor=proposal.agent_id,
            at=now, idem_key=gate.idempotency_key,
            payload={"action": action.model_dump(mode="json"), "input_hash": gate.input_hash,
                     "decision_id": decision.id, "agent": proposal.agent_id,
                     "task_id": proposal.task_id,
                     # INVARIANT: the configured tenant, never the proposal's claim
                     "tenant": agent.tenant if agent else "default",
                     "cost": spec.cost, "approval_id": approval.id if approval else None,
                     "tool": spec.ref, "idempotency": str(spec.idempotency),
                     "worker": self.lease.id})
        call = ToolCall(tool_id=spec.id, target=action.target, arguments=gate.arguments,
                        idempotency_key=gate.idempotency_key, environment=action.environment,
                        dry_run=proposal.action.dry_run, run_id=run_id,
                        actor=proposal.agent_id)
        try:
            result = self.gateway.execute(spec=spec, action=action, call=call,
                                          before=before, intent=intent)
        except KeyAlreadyClaimed:
            if self.journal.intent_for_key(gate.idempotency_key) is not None:
                return self._replayed(proposal, gate, decision, base)
            # the key is free: what another execution took first is the approve-once
            return self._await_approval(proposal, gate, decision, base, now)
        attempt = 1
        while result.raised and spec.idempotency in _RETRYABLE and attempt <= TOOL_RETRY_LIMIT:
            result = self.gateway.retry(spec=spec, action=action, call=call, retry=NewEvent(
                run_id=run_id, kind="action.retry", subject=action.id, actor=RUNTIME_ACTOR,
                at=self.clock(),
                payload={"idempotency_key": gate.idempotency_key, "attempt": attempt,
                         "reason": result.observation.error, "worker": self.lease.id,
                         "idempotency": str(spec.idempotency)}))
            attempt += 1
        crashpoint("before_verification")
        return self._verify_and_commit(proposal, spec, decision, action, gate.arguments, result)

    def _excluded(self, proposal: Proposal) -> set[str]:
        """Who may never approve this proposal: the agent, its principal, on whose behalf."""
        agent = self.config.agent(proposal.agent_id)
        return {x for x in (proposal.agent_id, agent.acts_for if agent else None,
                            proposal.on_behalf_of) if x}

    def _verify_and_commit(self, proposal: Proposal, spec: ToolSpec,
                           decision: RuntimeDecision, action: Action, arguments: BaseModel,
                           result: Any, *, reconciled: str | None = None) -> Outcome:
        run_id = proposal.effective_run_id
        # determinism seam: one clock reading, journaled as `verified_at` — every reading
        # the runtime takes lands in the journal, which is what strict replay feeds back
        verified_at = self.clock()
        g2 = self.gate2.run(spec=spec, action=action, arguments=arguments,
                            observation=result.observation, output=result.output,
                            output_error=result.output_error, started_at=result.started_at,
                            now=verified_at)
        evidence_refs: tuple[str, ...] = ()
        if g2.report is not None and g2.report.evidence:
            evidence_refs = (content_hash(g2.report.evidence),)
        verification = VerificationResult(
            id="ver:" + action.id.removeprefix("act:"), execution_id=action.id,
            status=g2.status, checks=g2.checks, evidence_refs=evidence_refs,
            verifier_id=g2.verifier_id, verified_at=verified_at,
            provenance=Provenance(source=g2.report.source if g2.report else "gate2",
                                  actor=RUNTIME_ACTOR, timestamp=verified_at,
                                  tool_ref=spec.ref, output_hash=result.observation.output_hash,
                                  evidence_refs=evidence_refs,
                                  verification_status=str(g2.status)),
        )
        events = [NewEvent(run_id=run_id, kind="verification.recorded", subject=verification.id,
                           actor=RUNTIME_ACTOR, at=verified_at,
                           payload={"verification": verification.model_dump(mode="json"),
                                    "action_id": action.id,
                                    "transition_id": "st:" + action.id.removeprefix("act:"),
                                    "evidence": g2.report.evidence if g2.report else {},
                                    # determinism seam: the verifier is an activity; its raw
                                    # answer is journaled whole so strict replay can serve it
                                    "verifier_report": _report_record(g2.report)})]
        reasons: list[str] = [f"{c.name}: {c.detail}" for c in g2.checks
                              if c.status is not VerificationStatus.VERIFIED]
        commit = g2.status is VerificationStatus.VERIFIED and result.output_error is None
        transition = StateTransition(
            id="st:" + action.id.removeprefix("act:"), resource_ref=action.target,
            to_state=result.observation.output_hash, decision_id=decision.id,
            verification_id=verification.id,
            committed_at=verified_at if commit else None,
            aborted_at=None if commit else verified_at,
            reason=None if commit else "; ".join(reasons) or "not verified",
        )
        status = (_VERIFICATION_STATUS[g2.status] if result.output_error is None
                  else OutcomeStatus.FAILED)
        if commit:
            problems = self._commit_problems(run_id, [*events, self._transition_event(
                run_id, transition, action)])
            if problems:
                transition = transition.model_copy(update={
                    "committed_at": None, "aborted_at": verified_at,
                    "reason": "integrity check failed: " + "; ".join(problems)})
                reasons.extend(problems)
                status = OutcomeStatus.FAILED
        if reconciled:
            reasons.append("reconciled after a crash: " + reconciled)
        outcome = Outcome(run_id=run_id, proposal_id=proposal.id, status=status,
                          decision=decision, action=action, observation=result.observation,
                          verification=verification, transition=transition,
                          reasons=tuple(reasons))
        crashpoint("before_commit")
        return self._settle(proposal, spec, action, outcome,
                            [*events, self._transition_event(run_id, transition, action)],
                            reconciled=reconciled is not None)

    @staticmethod
    def _transition_event(run_id: str, transition: StateTransition, action: Action) -> NewEvent:
        kind = "transition.committed" if transition.committed_at else "transition.aborted"
        return NewEvent(run_id=run_id, kind=kind, subject=transition.id, actor=RUNTIME_ACTOR,
                        at=transition.committed_at or transition.aborted_at or _utcnow(),
                        payload={"transition": transition.model_dump(mode="json"),
                                 "action_id": action.id})

    def _commit_problems(self, run_id: str, events: Sequence[NewEvent]) -> list[str]:
        problems: list[str] = []
        for hook in self.commit_hooks:
            try:
                problems.extend(hook(run_id, events))
            except Exception as exc:  # INVARIANT: a check that cannot run blocks the commit
                problems.append(f"integrity check raised {type(exc).__name__}: {exc}")
        return problems

    def run_plan(self, plan: Plan) -> PlanOutcome:
        """Run a plan step by step, each step through both gates."""
        return run_plan(self, plan)


__all__ = ["ApprovalError", "CommitHook", "Runtime"]
