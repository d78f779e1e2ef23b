"""Typed records: the entities of the design paper's §4 and the API shapes of §17.

Every record is a frozen pydantic v2 model with ``extra="forbid"``: a field that is not
declared is an error, never silently dropped. Consequential records carry a
:class:`Provenance` (§14) so a decision taken last quarter stays explainable under the
rules then in force.

Naming: the §17 API shapes *are* the entities they describe —
``Decision`` is ``RuntimeDecision``, ``Observation`` is ``ExecutionObservation`` and
``Verification`` is ``VerificationResult`` — so there is one model per thing.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .errors import InputError
from .inputs import CEILINGS, DEFAULT_LIMITS, InputLimits, check_count, check_id, check_value

#: the identity under which the runtime journals its own events
RUNTIME_ACTOR = "cradle-kg/runtime"

#: the largest canonical-JSON size of a proposal's arguments we accept (bytes)
MAX_ARGUMENTS_BYTES = 64 * 1024

Identifier = str


class Record(BaseModel):
    #: NaN and infinities have no JSON form: refused, never journaled as ``null``
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False,
                              allow_inf_nan=False, defer_build=True)


class SideEffectClass(StrEnum):
    """What a tool can do to the world, from harmless to final (§13)."""

    READ_ONLY = "read_only"
    REVERSIBLE = "reversible"
    COMPENSABLE = "compensable"
    EXTERNAL_WRITE = "external_write"
    IRREVERSIBLE = "irreversible"


class IdempotencyClass(StrEnum):
    """How a repeated call behaves: naturally idempotent, keyed, or not at all."""

    NATURAL = "natural"
    KEYED = "keyed"
    NONE = "none"


class RiskLevel(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class Verdict(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    REPAIR = "repair"
    CLARIFY = "clarify"
    REQUIRE_APPROVAL = "require_approval"


class VerificationStatus(StrEnum):
    VERIFIED = "verified"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"


class CheckStatus(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"
    NOT_EVALUATED = "not_evaluated"


class OutcomeStatus(StrEnum):
    """How a submission ended (the paper's §5 outcomes)."""

    EXECUTED = "executed"  # executed and verified, transition committed
    DENIED = "denied"
    NEEDS_CLARIFICATION = "needs_clarification"
    AWAITING_APPROVAL = "awaiting_approval"
    REPAIR = "repair"
    ESCALATED = "escalated"
    VERIFICATION_FAILED = "verification_failed"
    INCONCLUSIVE = "inconclusive"
    FAILED = "failed"  # the tool raised or broke its contract
    IN_PROGRESS = "in_progress"  # another submission holds the same idempotency key


class Provenance(Record):
    """The §14 fields every consequential result carries."""

    source: str
    actor: str
    timestamp: datetime
    model_ref: str | None = None
    tool_ref: str | None = None  # tool-id@version
    policy_version: str | None = None
    pack_versions: tuple[str, ...] = ()
    ontology_version: str | None = None
    input_hash: str | None = None
    output_hash: str | None = None
    evidence_refs: tuple[str, ...] = ()
    verification_status: str | None = None
    confidence: float | None = None


# --- actors and work -------------------------------------------------------------------


class Agent(Record):
    id: Identifier
    role: str = "agent"
    skills: tuple[str, ...] = ()
    model_ref: str | None = None
    permitted_scopes: tuple[str, ...] = ()
    #: environments this identity may act in (target-environment check)
    environments: tuple[str, ...] = ("local",)
    tenant: str = "default"
    #: the person or service this agent acts for; they may not approve its actions
    acts_for: str | None = None


class Task(Record):
    id: Identifier
    origin: str
    input_ref: str | None = None
    status: str = "open"
    deadline: datetime | None = None


class Intent(Record):
    id: Identifier
    task_id: Identifier
    intent_type: str
    slots: dict[str, Any] = Field(default_factory=dict)
    confidence: float | None = None


class ActionRequest(Record):
    """What a proposal asks to do: the tool (``action_type``), its target and arguments."""

    action_type: Identifier
    target: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    environment: str = "local"
    #: an agent may pin its own key; otherwise the runtime derives one
    idempotency_key: str | None = None
    risk_level: RiskLevel | None = None
    #: strict: ``"false"`` is an error, not a boolean
    dry_run: StrictBool = False


class CandidateFact(Record):
    subject: str
    predicate: str
    object: Any
    source: str
    confidence: StrictFloat | None = None


class FactCheck(Record):
    """A verifier's finding on one candidate fact of the proposal (by its index in
    ``Proposal.facts``): confirmed by what it read (``verified``) or contradicted by it
    (``contradicted``). A fact becomes Verified only this way, supported by the
    verification's evidence; a contradicted fact becomes Rejected and gate 2 fails."""

    fact: StrictInt = Field(ge=0)
    status: Literal["verified", "contradicted"]
    detail: str = ""


def _check_action(action: ActionRequest, limits: InputLimits, where: str, depth: int) -> None:
    for name in ("action_type", "target", "environment", "idempotency_key"):
        check_id(getattr(action, name), limits=limits, where=f"{where}.{name}")
    check_value(action.arguments, limits=limits, where=f"{where}.arguments", depth=depth + 1)


class Proposal(Record):
    """An agent's candidate action, explicitly probabilistic. It never runs by itself."""

    id: Identifier
    task_id: Identifier
    agent_id: Identifier
    action: ActionRequest
    facts: tuple[CandidateFact, ...] = ()
    evidence_refs: tuple[str, ...] = ()
    confidence: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)
    alternatives: tuple[ActionRequest, ...] = ()
    #: the run this proposal belongs to; by default ``run:<task_id>``
    run_id: Identifier | None = None
    step: StrictInt = Field(default=0, ge=0)
    attempt: StrictInt = Field(default=0, ge=0)
    on_behalf_of: str | None = None
    tenant: str | None = None

    @model_validator(mode="after")
    def _within_limits(self, info: ValidationInfo) -> Proposal:
        """Sizes and shapes: the configured limits when the runtime validates (passed as
        ``context={"input_limits": ...}``), else the ceilings no configuration may exceed."""
        context = info.context if isinstance(info.context, dict) else {}
        limits = context.get("input_limits")
        try:
            self.check_limits(limits if isinstance(limits, InputLimits) else CEILINGS)
        except InputError as exc:
            raise ValueError(exc.message) from None
        return self

    def check_limits(self, limits: InputLimits = DEFAULT_LIMITS) -> None:
        """A validated proposal's ids, counts and free values, against ``limits``.

        Depths are those of the proposal as a JSON document: its arguments sit at level 3.
        """
        for name in ("id", "task_id", "agent_id", "run_id", "on_behalf_of", "tenant"):
            check_id(getattr(self, name), limits=limits, where=name)
        check_count(self.facts, limit=limits.max_facts, where="facts")
        check_count(self.evidence_refs, limit=limits.max_evidence_refs, where="evidence_refs")
        check_count(self.alternatives, limit=limits.max_alternatives, where="alternatives")
        _check_action(self.action, limits, "action", 2)
        for i, alternative in enumerate(self.alternatives):
            _check_action(alternative, limits, f"alternatives[{i}]", 3)
        for i, ref in enumerate(self.evidence_refs):
            check_id(ref, limits=limits, where=f"evidence_refs[{i}]")
        for i, fact in enumerate(self.facts):
            for name in ("subject", "predicate", "source"):
                check_id(getattr(fact, name), limits=limits, where=f"facts[{i}].{name}")
            check_value(fact.object, limits=limits, where=f"facts[{i}].object", depth=4)

    @property
    def effective_run_id(self) -> str:
        return self.run_id or f"run:{self.task_id}"

    @property
    def evidence_items(self) -> tuple[str, ...]:
        """The distinct blobs cited, in order: a ref cited twice is one item of evidence
        (what gate 1 counts and Cedar's ``context.evidence_count`` reads)."""
        return tuple(dict.fromkeys(self.evidence_refs))


class PlanStep(Record):
    proposal: Proposal
    depends_on: tuple[Identifier, ...] = ()


class AbortPolicy(StrEnum):
    """What becomes of the remaining steps when one is denied or fails verification."""

    ABORT_REMAINING = "abort_remaining"  # stop at the first failure
    SKIP_DEPENDENTS = "skip_dependents"  # skip only the steps that depend on it
    CONTINUE = "continue"  # run everything that can run


class Plan(Record):
    id: Identifier
    steps: tuple[PlanStep, ...]
    ordering_constraints: tuple[tuple[Identifier, Identifier], ...] = ()
    abort_policy: AbortPolicy = AbortPolicy.ABORT_REMAINING


class Action(Record):
    """The concrete operation that was (or would be) executed for a proposal."""

    id: Identifier
    proposal_id: Identifier
    action_type: Identifier
    target: str
    arguments: dict[str, Any]
    side_effect_class: SideEffectClass
    idempotency_key: str
    risk_level: RiskLevel
    environment: str
    input_hash: str
    executed_by: str | None = None
    executed_at: datetime | None = None
    provenance: Provenance | None = None


class ToolRecord(Record):
    """The §4 Tool entity: a registered capability with a declared contract."""

    id: Identifier
    version: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    side_effect_class: SideEffectClass
    required_scopes: tuple[str, ...] = ()
    supports_dry_run: bool = False
    idempotency: IdempotencyClass
    compensation_tool: str | None = None
    has_lookup: bool = False
    verifier: str | None = None
    description: str = ""


# --- what happened -------------------------------------------------------------------


class ObservedSideEffect(Record):
    kind: str
    resource: str
    detail: dict[str, Any] = Field(default_factory=dict)


class ExecutionObservation(Record):
    """Raw output of a tool: data, not truth."""

    id: Identifier
    execution_id: Identifier
    tool_id: Identifier
    raw_result_ref: str
    observed_at: datetime
    side_effects: tuple[ObservedSideEffect, ...] = ()
    output: dict[str, Any] = Field(default_factory=dict)
    output_hash: str
    reported_ok: bool = True
    error: str | None = None
    provenance: Provenance | None = None
    #: the code of the tool's typed refusal (:class:`~cradle_kg.errors.ToolRefused`): it
    #: wrote nothing, and ``error`` says why. Absent otherwise (an observation journaled
    #: before the field existed reads, and hashes, the same)
    refusal: str | None = Field(default=None, exclude_if=lambda v: v is None)


Observation = ExecutionObservation


class Fact(Record):
    id: Identifier
    subject: str
    predicate: str
    object: Any
    source_ref: str
    asserted_at: datetime
    confidence: float | None = None
    verification_status: Literal["verified", "failed", "inconclusive", "unverified"] = "unverified"
    evidence_refs: tuple[str, ...] = ()


class Evidence(Record):
    id: Identifier
    kind: str
    content_ref: str
    hash: str
    collected_at: datetime
    collector: str
    media_type: str = "application/octet-stream"


class Policy(Record):
    id: Identifier
    version: str
    scope: str
    rule_ref: str
    effect: Literal["permit", "forbid"]
    obligations: dict[str, str] = Field(default_factory=dict)


class Permission(Record):
    """Binds an identity to action types on resources (globs), in some environments."""

    subject: str
    action_type: str = "*"
    resource_selector: str = "*"
    #: narrows the grant; the typed language of :mod:`cradle_kg.conditions` (an unknown
    #: key is refused here, at load — never ignored)
    conditions: dict[str, Any] = Field(default_factory=dict)

    @field_validator("conditions")
    @classmethod
    def _conditions_typed(cls, v: dict[str, Any]) -> dict[str, Any]:
        if not v:  # no condition (valid): the condition language is not loaded to say so
            return v
        from .conditions import condition_problem

        problem = condition_problem(v)
        if problem is not None:
            raise ValueError(problem)
        return v


class Constraint(Record):
    id: Identifier
    domain_pack: str
    expression: str
    severity: Literal["violation", "warning", "info"] = "violation"


class PolicyResult(Record):
    policy_id: str
    effect: str
    determining: bool = True
    annotations: dict[str, str] = Field(default_factory=dict)


class CheckResult(Record):
    """One check of a gate: which, how it went, and why."""

    check: str
    status: CheckStatus
    reasons: tuple[str, ...] = ()
    code: str | None = None


class RuntimeDecision(Record):
    """The runtime's verdict on a proposal — never a bare boolean (§17)."""

    id: Identifier
    proposal_id: Identifier
    verdict: Verdict
    reasons: tuple[str, ...] = ()
    reason_codes: tuple[str, ...] = ()
    policy_results: tuple[PolicyResult, ...] = ()
    required_actions: tuple[str, ...] = ()
    checks: tuple[CheckResult, ...] = ()
    missing_facts: tuple[str, ...] = ()
    decided_at: datetime
    decided_by: str = "cradle-kg/gate1"
    granted_to: str | None = None
    policy_version: str
    pack_versions: tuple[str, ...] = ()
    provenance: Provenance | None = None


Decision = RuntimeDecision


class VerificationCheck(Record):
    name: str
    status: VerificationStatus
    detail: str = ""


class VerificationResult(Record):
    id: Identifier
    execution_id: Identifier
    status: VerificationStatus
    checks: tuple[VerificationCheck, ...] = ()
    evidence_refs: tuple[str, ...] = ()
    verifier_id: str = ""
    verified_at: datetime
    provenance: Provenance | None = None


Verification = VerificationResult


class StateTransition(Record):
    id: Identifier
    resource_ref: str
    from_state: str | None = None
    to_state: str | None = None
    decision_id: Identifier
    verification_id: Identifier | None = None
    committed_at: datetime | None = None
    aborted_at: datetime | None = None
    reason: str | None = None


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    CHANGES_REQUESTED = "changes_requested"
    EXPIRED = "expired"
    #: approved, then taken back by a person: authorizes nothing (more) — a reusable one
    #: may be taken back after its use too, what ran under it staying authorized
    REVOKED = "revoked"


class HumanApproval(Record):
    """An approval bound to one decision and to the digest of the exact action (§15)."""

    id: Identifier
    decision_id: Identifier
    proposal_id: Identifier
    run_id: Identifier
    action_digest: str
    requested_by: str
    requested_at: datetime
    status: ApprovalStatus = ApprovalStatus.PENDING
    approver_id: str | None = None
    decided_at: datetime | None = None
    scope: str | None = None
    expires_at: datetime | None = None
    once: bool = True
    consumed: bool = False
    reason: str | None = None


class AuditEvent(Record):
    """One row of the append-only, hash-chained journal."""

    seq: int
    id: Identifier
    run_id: str
    kind: str
    subject: str
    actor: str
    at: datetime
    payload: dict[str, Any]
    payload_hash: str
    prev_hash: str
    hash: str


_EVENT_FIELDS = frozenset(AuditEvent.model_fields)


def built_event(**values: Any) -> AuditEvent:
    """An :class:`AuditEvent` from every one of its fields, values the caller has just
    computed with their types (a journal's append, the commit check's pending events):
    what ``AuditEvent.model_construct`` builds — no validation, the same instance — without
    its pass over the fields for defaults and aliases (a quarter of its time; an append
    builds one per event written, the commit check one per event checked)."""
    assert values.keys() == _EVENT_FIELDS, sorted(values.keys() ^ _EVENT_FIELDS)
    event = AuditEvent.__new__(AuditEvent)
    object.__setattr__(event, "__dict__", values)
    object.__setattr__(event, "__pydantic_fields_set__", set(values))
    object.__setattr__(event, "__pydantic_extra__", None)
    object.__setattr__(event, "__pydantic_private__", None)
    return event


class Outcome(Record):
    """What ``Runtime.submit`` returns: how the submission ended, with its records."""

    run_id: Identifier
    proposal_id: Identifier
    status: OutcomeStatus
    decision: RuntimeDecision | None = None
    action: Action | None = None
    observation: ExecutionObservation | None = None
    verification: VerificationResult | None = None
    transition: StateTransition | None = None
    approval: HumanApproval | None = None
    reasons: tuple[str, ...] = ()
    #: true when the outcome was recorded earlier under the same idempotency key
    replayed: bool = False

    @property
    def ok(self) -> bool:
        return self.status is OutcomeStatus.EXECUTED


#: every record that ``cradle-kg schema NAME`` can export
SCHEMAS: dict[str, type[Record]] = {
    "Agent": Agent,
    "Task": Task,
    "Intent": Intent,
    "Proposal": Proposal,
    "ActionRequest": ActionRequest,
    "Plan": Plan,
    "Action": Action,
    "Tool": ToolRecord,
    "Observation": ExecutionObservation,
    "ExecutionObservation": ExecutionObservation,
    "Fact": Fact,
    "Evidence": Evidence,
    "Policy": Policy,
    "Permission": Permission,
    "Constraint": Constraint,
    "Decision": RuntimeDecision,
    "RuntimeDecision": RuntimeDecision,
    "Verification": VerificationResult,
    "VerificationResult": VerificationResult,
    "StateTransition": StateTransition,
    "HumanApproval": HumanApproval,
    "AuditEvent": AuditEvent,
    "Provenance": Provenance,
    "Outcome": Outcome,
}
