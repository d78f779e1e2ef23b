"""Gate 1 — the pre-execution gate: eleven checks, cheapest first (§6).

structure · identity · permission · policies · domain preconditions · evidence ·
approval · risk · cost and rate · target environment · idempotency

Each check yields a :class:`CheckResult`. A deny, repair or clarify stops the gate (the
remaining checks are recorded as ``not_evaluated``); an approval requirement is noted
and the gate goes on, so a proposal that would be denied anyway is denied rather than
sent to a human. The output is a :class:`RuntimeDecision` — never a bare boolean.

Fail closed: any exception inside a check is a deny that names the check.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any

from pydantic import BaseModel

from ...canonical import canonical_json, content_hash
from ...conditions import as_written, evaluate, parse_conditions
from ...config import RuntimeConfig
from ...errors import InputError
from ...inputs import journal_text
from ...policy import PolicyEngine, PolicyOutcome
from ...records import (
    Agent,
    AuditEvent,
    CheckResult,
    CheckStatus,
    PolicyResult,
    Proposal,
    RiskLevel,
    SideEffectClass,
    Verdict,
)
from ...redaction import mask_payload, scrub, secret_values
from ...storage import Journal, KeyAsked, UsageCap
from ...tools import (
    ToolRegistry,
    ToolSpec,
    fields_by_alias,
    filled_in,
    run_arguments,
    written_twice,
)
from ..approvals import lapsed
from .findings import Finding, ValidatorBinding, answered
from .keys import (
    RESERVED_KEY_PREFIXES,
    derive_idempotency_key,
    input_hash_of,
    proposal_hash,
    recorded_submission,
    submission_key,
)
from .limits import limit_violation, usage_caps
from .lineage import LineageGate, check_lineage, lineage_context, uncovered


@dataclass
class GateInput:
    """Everything gate 1 reads. It writes nothing."""

    config: RuntimeConfig
    tools: ToolRegistry
    policies: PolicyEngine
    journal: Journal
    validators: Sequence[ValidatorBinding]
    pack_versions: tuple[str, ...]
    evidence_exists: Callable[[str], bool]
    #: when a blob was last collected by someone other than the second argument (the
    #: proposing agent; None: by anyone), or None (tests/security/test_175)
    #: (ref, proposing agent or None, the proposal's run or None, its action's pinned key
    #: — "" for none — or None): when a blob was collected by no agent (any collector:
    #: None) for that run or any (any run: None), for that action or any (any: None)
    evidence_collected_at: Callable[[str, str | None, str | None, str | None],
                                    datetime | None]
    #: whether an approval covers (action digest, now, proposer, the tool's ``id@version``,
    #: the scope the policies ask within — ``approvals.ANY_SCOPE``: not compared): an
    #: approval asked for under another version, or within another scope, covers nothing,
    #: and is said in the list (tests/security/test_146, test_412)
    approval_available: Callable[[str, datetime, str, str, str | None, list[str]], bool]
    now: datetime
    lineage: LineageGate | None = None
    #: whether a person rejected, or asked for changes to, this action digest in the
    #: proposal's run: it then never runs there without a person (tests/security/test_105)
    refused_here: Callable[[str], bool] | None = None
    #: why the home's ``config.json`` does not load now (a long-lived process read it
    #: again): every proposal is denied until it does (fail closed)
    config_problem: str | None = None
    #: why the policy files do not load now: every proposal is denied until they do
    policy_problem: str | None = None
    #: set when this proposal is decided again because the journal refused its use of an
    #: approval of its run as after the run's end (``if_run_open``): the refusal's code
    #: and reason (:func:`~cradle_kg.runs.after_the_end`) — the approval check denies it
    #: (tests/security/test_297)
    run_ended: tuple[str, str] | None = None


@dataclass
class GateResult:
    verdict: Verdict
    checks: list[CheckResult]
    reasons: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)
    policy_results: tuple[PolicyResult, ...] = ()
    required_actions: list[str] = field(default_factory=list)
    missing_facts: list[str] = field(default_factory=list)
    risk: RiskLevel = RiskLevel.LOW
    approval_scope: str | None = None
    #: what the graph policies on the arguments' lineage ask a person for, which an
    #: approval was found to cover before the scope it must be asked within was known
    lineage_covered: list[str] = field(default_factory=list)
    idempotency_key: str = ""
    input_hash: str = ""
    action_digest: str = ""
    #: a tool with secret arguments: its digest as made before they were keyed (unkeyed:
    #: what the journal's older intents, approvals and refusals name; never journaled)
    legacy_digest: str | None = None
    #: the intent already recorded under this key, when the proposal is a repeat
    recorded_intent_seq: int | None = None
    #: a person refused this action in the run (read once: ``_refused_here``)
    refused: bool | None = None
    spec: ToolSpec | None = None
    #: the secret arguments of the proposal's tool, known once the tool is (before
    #: :attr:`spec`, which is set when the structure holds): a refusal of the arguments
    #: quotes them too (``tests/security/test_140``)
    secrets: tuple[str, ...] = ()
    arguments: BaseModel | None = None
    #: :attr:`arguments` as the tool runs with them, by field name (``run_arguments``):
    #: made once, read by the written-vs-run check, the conditions and Cedar's context
    run_args: dict[str, Any] = field(default_factory=dict)
    obligations: PolicyOutcome | None = None
    #: what each domain validator answered (journaled with the decision)
    validator_findings: list[dict[str, Any]] = field(default_factory=list)
    #: the key this first submission of its id claims in the journal (UNIQUE)
    claim_key: str | None = None
    #: the cited blobs, each fresh, stale, absent, the agents' own, collected for another
    #: run or for another action of the run (read once: :meth:`Gate1._evidence_of`)
    evidence: tuple[list[str], list[str], list[str], list[str], list[str],
                    list[str]] | None = None
    #: the proposal repeats, byte for byte, the recorded submission of its id
    resubmission: bool = False
    #: set when the id was used in the run for other content: this refused submission's
    #: own hash, so the journal and the graph keep it apart from the recorded one
    submission: str | None = None
    #: where the arguments came from (a :class:`~cradle_kg.lineage.trace.Trace`)
    lineage: Any = None
    #: the limits the intent carries, checked again by the journal under its writer's lock
    caps: tuple[UsageCap, ...] = ()
    #: the version of the policy set this proposal was decided under (set by the runtime)
    policy_version: str = ""


def cedar_value(value: Any) -> str | bool | int | None:
    """An argument as Cedar's context holds it: a string, a boolean, an integer (a whole
    float is that integer); a number Cedar's ``Long`` cannot hold (a fraction, past 2^62)
    is its text — comparing it is a type error, and a policy that fails to evaluate
    denies. Only what has no scalar form (a list, an object, null) is left out: a number
    left out made ``has amount`` false and a ``forbid`` on it never apply."""
    if isinstance(value, str | bool):
        return value
    if isinstance(value, float | Decimal) and math.isfinite(value) and value == int(value):
        value = int(value)
    if isinstance(value, int):
        return value if abs(value) < 2**62 else str(value)
    if isinstance(value, float | Decimal):
        return str(value)
    return None


def run_value(run_with: Any) -> str | bool | int | None:
    """A value of the tool's model as Cedar's context holds it (:func:`cedar_value`): a
    choice its value, a URL, a UUID, a date the model parsed its JSON form."""
    return cedar_value(as_written(run_with))


def cedar_arguments(raw: Mapping[str, Any], made: Mapping[str, Any],
                    model: type[BaseModel]) -> dict[str, Any]:
    """``context.arguments``: the scalars the agent wrote (each the tool's own value:
    :func:`coerced_argument`), and the value the tool runs with of each field of its model
    the agent did not write as a scalar under its name — a default it left out, a value it
    wrote under the field's alias, one the model reads out of a list. Before, Cedar did
    not see those: ``has recursive`` was false for a ``recursive: bool = True`` left out,
    a forbid on it did not apply, and the tool ran the recursive delete it names
    (``tests/security/test_362``). ``made``: the arguments as the tool runs with them
    (:func:`~cradle_kg.tools.run_arguments` of its ``model``)."""
    args = {k: c for k, v in raw.items() if (c := cedar_value(v)) is not None}
    for key, run_with in made.items():
        if key not in args and (c := run_value(run_with)) is not None:
            args[key] = c
    # an upstream tool's defaults: its model keeps what was sent, the upstream fills them
    # in (before, a forbid on one left out did not apply: tests/security/test_382)
    for key, default in filled_in(model).items():
        if key not in raw and key not in args and (c := cedar_value(default)) is not None:
            args[key] = c
    return args


def coerced_argument(raw: Mapping[str, Any], made: Mapping[str, Any]) -> str | None:
    """Why an argument the agent gave is not what the tool would run with, or None.

    Cedar reads ``context.arguments`` as the agent wrote them (:func:`cedar_value`); the
    tool receives them through its model, which coerces (``"true"`` and ``1`` are ``True``
    for a ``bool``, ``"7"`` is ``7`` for an ``int``, ``" x"`` may be ``"x"``). Cedar's
    ``==``, ``!=`` and ``.contains`` compare values of two types without an error — they
    differ — so a forbid on ``context.arguments.recursive == true`` did not apply to
    ``"true"`` and the tool ran the recursive delete it names (``tests/security/
    test_102``). An argument whose scalar, as Cedar would read it, is not the one the tool
    runs with is refused (a whole float and its integer are one value; what has no scalar
    form on either side is not compared; a value the model parses into a type of its own
    is compared in its JSON form, :func:`~cradle_kg.conditions.json_form`): the agent
    writes the value as its type. ``made``: the arguments as the tool runs with them
    (:func:`~cradle_kg.tools.run_arguments`)."""
    for key, value in raw.items():
        if key not in made:
            continue
        given, as_run = cedar_value(value), run_value(made[key])
        if given is None or as_run is None:
            continue
        if type(given) is not type(as_run) or given != as_run:
            shown = canonical_json(value)
            return (f"`action.arguments.{key[:80]}`: `{shown[:80]}` is not the value the tool "
                    f"runs with (`{canonical_json(as_run)[:80]}`): write it as its type, "
                    "which is what the policies are asked about")
    return None


#: why an approval given before secret arguments were keyed no longer covers the action
LEGACY_APPROVAL = ("an approval given for this action before its secret arguments were "
                   "keyed names its unkeyed digest: it is not used (fail closed); approve "
                   "the action again")


#: how many expired or revoked approvals under a key a check reads past before it takes
#: the next one found as holding the key (``tests/security/test_306``)
LAPSED_LOOKBACK = 8


class _Stop(Exception):
    def __init__(self, verdict: Verdict, code: str, reasons: Sequence[str],
                 missing: Sequence[str] = ()) -> None:
        super().__init__(code)
        self.verdict, self.code, self.reasons, self.missing = verdict, code, reasons, missing


def assess_risk(proposal: Proposal, spec: ToolSpec, config: RuntimeConfig) -> RiskLevel:
    cls = spec.side_effect_class
    declared = proposal.action.risk_level or RiskLevel.LOW
    if cls is SideEffectClass.IRREVERSIBLE:
        return RiskLevel.HIGH
    if proposal.action.environment in config.approval_environments and (
        cls is not SideEffectClass.READ_ONLY
    ):
        return RiskLevel.HIGH
    floor = RiskLevel.MEDIUM if cls is SideEffectClass.EXTERNAL_WRITE else RiskLevel.LOW
    order = [RiskLevel.LOW, RiskLevel.MEDIUM, RiskLevel.HIGH]
    return max(declared, floor, key=order.index)


def _hide_secrets(result: GateResult, proposal: Proposal) -> None:
    """The texts gate 1 relays — its reasons, each check's, what the domain validators
    answered (journaled) — with the proposal's secret values masked: a pack's validator, a
    check that raised, quote what they were given, and those texts are the agent's answer,
    the decision's record and the graph's (``tests/security/test_136``). Masking twice
    changes nothing, so strict replay, which serves the journaled findings, writes the same."""
    arguments = proposal.action.arguments
    if not result.secrets or not isinstance(arguments, Mapping):
        return
    values = secret_values(arguments, result.secrets)
    if not values:
        return
    result.reasons[:] = [scrub(r, values) for r in result.reasons]
    result.checks[:] = [c.model_copy(update={"reasons": tuple(scrub(x, values)
                                                              for x in c.reasons)})
                        if c.reasons else c for c in result.checks]
    result.validator_findings[:] = [mask_payload(f, {}, values)
                                    for f in result.validator_findings]


@cache
def _passed(name: str) -> CheckResult:
    """A check's plain pass (no reason, no code): records are frozen, so one of each serves
    every call (a governed call built 11 check records, 6 of them these); built at first
    use, not at import."""
    return CheckResult(check=name, status=CheckStatus.PASS)


#: one check: reads the proposal, notes what it found on the result, or stops the gate
Check = Callable[["Gate1", Proposal, GateResult], CheckResult]


class Gate1:
    def __init__(self, inputs: GateInput) -> None:
        self.i = inputs

    def run(self, proposal: Proposal) -> GateResult:
        result = self._run(proposal)
        _hide_secrets(result, proposal)
        return result

    def _run(self, proposal: Proposal) -> GateResult:
        result = GateResult(verdict=Verdict.ALLOW, checks=[])
        for index, (name, check) in enumerate(self.CHECKS):
            try:
                result.checks.append(check(self, proposal, result))
            except _Stop as stop:
                self._stopped(result, name, stop, CHECK_NAMES[index + 1:])
                return result
            except Exception as exc:  # INVARIANT: a check that crashes denies
                # its text as a journal holds it (a lone surrogate: test_513)
                crashed = _Stop(Verdict.DENY, f"{name}_error", [
                    f"check `{name}` failed: {type(exc).__name__}: {journal_text(str(exc))}"])
                self._stopped(result, name, crashed, CHECK_NAMES[index + 1:])
                return result
        if any(c.code == "approval_required" for c in result.checks):
            result.verdict = Verdict.REQUIRE_APPROVAL
            result.required_actions.append("human_approval")
            if any(LEGACY_APPROVAL in c.reasons for c in result.checks):
                result.reasons.append(LEGACY_APPROVAL)  # what the person and agent see
        return result

    @staticmethod
    def _stopped(result: GateResult, name: str, stop: _Stop, rest: Sequence[str]) -> None:
        result.verdict = stop.verdict
        result.reasons.extend(stop.reasons)
        result.codes.append(stop.code)
        result.missing_facts.extend(stop.missing)
        result.checks.append(CheckResult(check=name, status=CheckStatus.FAIL,
                                         reasons=tuple(stop.reasons), code=stop.code))
        result.checks.extend(CheckResult(check=n, status=CheckStatus.NOT_EVALUATED) for n in rest)
        if stop.verdict is Verdict.CLARIFY and stop.missing:
            result.required_actions.append("provide: " + ", ".join(stop.missing))
        if stop.verdict is Verdict.REPAIR:
            result.required_actions.append("repair the proposal")

    # --- the checks ------------------------------------------------------------

    def _structure(self, p: Proposal, r: GateResult) -> CheckResult:
        self._submission(p, r)
        if not self.i.tools.has(p.action.action_type):
            raise _Stop(Verdict.DENY, "unknown_tool",
                        [f"`action.action_type`: unknown tool `{p.action.action_type}`"])
        spec = self.i.tools.get(p.action.action_type)
        r.secrets = spec.secrets
        size = len(canonical_json(p.action.arguments).encode("utf-8"))
        if size > spec.max_argument_bytes:
            raise _Stop(Verdict.DENY, "arguments_too_large",
                        [f"`action.arguments`: {size} bytes, more than the "
                         f"{spec.max_argument_bytes} allowed for `{spec.id}`"])
        try:
            r.arguments = spec.parse_arguments(p.action.arguments)
        except InputError as exc:
            raise _Stop(Verdict.DENY, "invalid_arguments", [exc.message]) from exc
        twice = written_twice(spec.input_model, p.action.arguments)
        if twice:
            raise _Stop(Verdict.DENY, "invalid_arguments", [
                "`action.arguments`: " + " and ".join(f"`{n[:80]}`" for n in twice)
                + f" name one argument of `{spec.id}`: write it once"])
        r.run_args = run_arguments(r.arguments)
        coerced = coerced_argument(p.action.arguments, r.run_args)
        if coerced is not None:
            raise _Stop(Verdict.DENY, "invalid_arguments", [coerced])
        mismatch = spec.target_problem(p.action.target, r.arguments)
        if mismatch is not None:
            raise _Stop(Verdict.DENY, "target_mismatch", [mismatch])
        key = p.action.idempotency_key
        if key is not None and (not key or key.startswith(RESERVED_KEY_PREFIXES)):
            raise _Stop(Verdict.DENY, "idempotency_key_reserved",
                        [f"`action.idempotency_key`: `{key[:80]}` is empty or in the "
                         "runtime's own namespace (" + ", ".join(
                             f"`{x}`" for x in RESERVED_KEY_PREFIXES) + ")"])
        if p.action.dry_run and not spec.supports_dry_run:
            raise _Stop(Verdict.DENY, "dry_run_unsupported",
                        [f"`action.dry_run`: tool `{spec.id}` does not support dry runs"])
        r.spec = spec
        if r.secrets:  # INVARIANT: a secret is bound through its HMAC (keys.py)
            r.input_hash = input_hash_of(p, secrets=r.secrets,
                                         key=self.i.journal.digest_key())
            r.legacy_digest = input_hash_of(p)
        else:
            r.input_hash = input_hash_of(p)
        r.idempotency_key = derive_idempotency_key(p, r.input_hash)
        r.action_digest = r.input_hash
        return _passed("structure")

    def _submission(self, p: Proposal, r: GateResult) -> None:
        """A proposal id is used once per run: a second submission must be identical."""
        recorded = recorded_submission(self.i.journal, p)
        if recorded is None:
            r.claim_key = submission_key(p.effective_run_id, p.id, p.attempt)
            return
        mine = proposal_hash(p)
        if content_hash(recorded.payload["proposal"]) == mine:
            r.resubmission = True
            return
        r.submission = mine
        raise _Stop(Verdict.DENY, "proposal_id_reused",
                    [f"`id`: proposal `{p.id}` (attempt {p.attempt}) was already submitted in "
                     f"run `{p.effective_run_id}` with other content; a new proposal needs a "
                     "new id"])

    def _agent(self, p: Proposal) -> Agent:
        agent = self.i.config.agent(p.agent_id)
        assert agent is not None  # checked by _identity
        return agent

    def _identity(self, p: Proposal, r: GateResult) -> CheckResult:
        if self.i.config_problem is not None:  # who may act is unknown: nobody does
            raise _Stop(Verdict.DENY, "config_unloadable", [
                "the home's configuration changed and does not load (fail closed: nothing "
                f"is allowed until it does): {self.i.config_problem}"])
        agent = self.i.config.agent(p.agent_id)
        if agent is None:
            raise _Stop(Verdict.DENY, "unknown_identity",
                        [f"`agent_id`: unknown identity `{p.agent_id}`"])
        if p.tenant is not None and p.tenant != agent.tenant:
            raise _Stop(Verdict.DENY, "tenant_mismatch",
                        [f"`tenant`: `{p.agent_id}` belongs to tenant `{agent.tenant}` "
                         f"(configured), not `{p.tenant}`"])
        if p.on_behalf_of and agent.acts_for and p.on_behalf_of != agent.acts_for:
            raise _Stop(Verdict.DENY, "wrong_principal",
                        [f"`on_behalf_of`: `{p.agent_id}` acts for `{agent.acts_for}`, "
                         f"not `{p.on_behalf_of}`"])
        return _passed("identity")

    def _permission(self, p: Proposal, r: GateResult) -> CheckResult:
        """A permission grants when its subject, action type and resource match and every
        one of its conditions (:mod:`cradle_kg.conditions`) holds; the reasons name them."""
        assert r.spec is not None
        agent = self._agent(p)
        unmet: list[str] = []
        held: list[str] | None = None
        for index, perm in enumerate(self.i.config.permissions):
            if not (perm.subject == agent.id
                    and fnmatch.fnmatchcase(p.action.action_type, perm.action_type)
                    and fnmatch.fnmatchcase(p.action.target, perm.resource_selector)):
                continue
            if not perm.conditions:
                held = []
                break
            # INVARIANT: conditions read the arguments as the tool will receive them
            ok, failed = evaluate(parse_conditions(perm.conditions),
                                  arguments=r.run_args,
                                  environment=p.action.environment, now=self.i.now,
                                  aliases=fields_by_alias(r.spec.input_model))
            label = f"permission #{index} (`{perm.action_type}` on `{perm.resource_selector}`)"
            if not failed:
                held = [f"{label}: condition {c}" for c in ok]
                break
            unmet.extend(f"{label}: condition {c}" for c in failed)
        if held is None and unmet:
            raise _Stop(Verdict.DENY, "permission_condition_failed",
                        [f"`{agent.id}` holds no permission whose conditions hold for "
                         f"`{p.action.action_type}` on `{p.action.target}`", *unmet])
        if held is None:
            raise _Stop(Verdict.DENY, "not_permitted",
                        [f"`{agent.id}` holds no permission for `{p.action.action_type}` "
                         f"on `{p.action.target}`"])
        missing = sorted(set(r.spec.required_scopes) - set(agent.permitted_scopes))
        if missing:
            raise _Stop(Verdict.DENY, "missing_scope",
                        [f"`{agent.id}` lacks scope(s) " + ", ".join(f"`{m}`" for m in missing)])
        return CheckResult(check="permission", status=CheckStatus.PASS, reasons=tuple(held))

    def cedar_context(self, p: Proposal, r: GateResult) -> dict[str, Any]:
        assert r.spec is not None
        agent = self._agent(p)
        # INVARIANT: never leaves a number out (see `cedar_value`); the values as the agent
        # wrote them, which are the tool's: one its model would coerce (`"5"`, `true`) was
        # refused by `_structure` (`coerced_argument`, tests/security/test_102); and those
        # the tool's model fills in (a default, an alias: `cedar_arguments`, test_362)
        assert r.arguments is not None
        args = cedar_arguments(p.action.arguments, r.run_args, type(r.arguments))
        return {
            "tool": r.spec.id,
            "side_effect_class": str(r.spec.side_effect_class),
            "environment": p.action.environment,
            "declared_risk": str(p.action.risk_level or RiskLevel.LOW),
            "tenant": agent.tenant,  # INVARIANT: identity comes from the configuration
            "task_id": p.task_id,
            "on_behalf_of": p.on_behalf_of or "",
            "role": agent.role,
            "dry_run": p.action.dry_run,
            # INVARIANT: the evidence the evidence check would take (in the store, collected,
            # fresh), not the references named: two made-up hashes made a policy reading
            # `evidence_count >= 2` permit (tests/security/test_174)
            "evidence_count": len(self._evidence_of(p, r)[0]),
            "arguments": args,
            "lineage": lineage_context(r),
        }

    def _policies(self, p: Proposal, r: GateResult) -> CheckResult:
        if self.i.policy_problem is not None:
            raise _Stop(Verdict.DENY, "policy_set_unloadable", [
                "the policy files changed and do not load (fail closed: nothing is allowed "
                f"until they do): {self.i.policy_problem}"])
        # lineage first: the trace feeds `context.lineage`, the graph policies may stop
        lineage = check_lineage(self.i.lineage, p, r, self.i.approval_available, self.i.now,
                                self.i.policies)
        if isinstance(lineage, tuple):
            raise _Stop(*lineage)
        agent = self._agent(p)
        outcome: PolicyOutcome = self.i.policies.evaluate(
            principal=("Agent", agent.id),
            action=("Action", p.action.action_type),
            resource=("Resource", p.action.target),
            context=self.cedar_context(p, r),
            entities=[{"uid": {"type": "Agent", "id": agent.id},
                       "attrs": {"role": agent.role, "tenant": agent.tenant}, "parents": []}],
        )
        r.policy_results = outcome.determining
        if outcome.errors:
            raise _Stop(Verdict.DENY, "policy_error",
                        ["a policy failed to evaluate (fail closed): " + e for e in outcome.errors])
        if not outcome.allowed:
            verdict = {"repair": Verdict.REPAIR, "clarify": Verdict.CLARIFY}.get(
                outcome.on_deny or "", Verdict.DENY)
            code = "no_permit" if not outcome.determining else "forbidden_by_policy"
            raise _Stop(verdict, code, list(outcome.deny_reasons))
        r.approval_scope = outcome.approval_scope
        r.obligations = outcome
        if r.lineage_covered and r.spec is not None and not self.i.approval_available(
                r.action_digest, self.i.now, p.agent_id, r.spec.ref, r.approval_scope, []):
            # the approval the lineage check found was asked within another scope than the
            # one known now: it covers nothing (tests/security/test_412)
            lineage = uncovered(r)
        return CheckResult(check="policies", status=CheckStatus.PASS,
                           code="approval_required" if lineage else None,
                           reasons=(*(f"permitted by `{x.policy_id}`"
                                      for x in outcome.determining), *lineage))

    def _domain(self, p: Proposal, r: GateResult) -> CheckResult:
        assert r.spec is not None
        findings: list[Finding] = []
        for binding in self.i.validators:
            if fnmatch.fnmatchcase(p.action.action_type, binding.tool_pattern):
                found = answered(binding.validator(p, r.spec), binding.name)
                # journaled with the decision: a validator may read the world, and strict
                # replay serves these answers instead of reading it again
                r.validator_findings.append({"validator": binding.name,
                                             "findings": [f.to_json() for f in found]})
                findings.extend(found)
        if not findings:
            return _passed("domain_preconditions")
        order = [Verdict.DENY, Verdict.REPAIR, Verdict.CLARIFY]
        verdict = min((f.verdict for f in findings), key=order.index)
        # in the order the validators give them (a pack orders its gaps by importance)
        missing = list(dict.fromkeys(m for f in findings for m in f.missing_facts))
        raise _Stop(verdict, findings[0].code, [f.message for f in findings], missing)

    def _evidence_of(self, p: Proposal, r: GateResult
                     ) -> tuple[list[str], list[str], list[str], list[str], list[str],
                                list[str]]:
        """The cited blobs that are evidence (in the store, journaled as collected by
        someone who is no agent of the home, for the proposal's run or for any, within the
        freshness limit), those too old, those absent, those only agents collected (their
        word: before, they counted, ``tests/security/test_175``, ``test_180``) and those
        collected for another run only (before, they counted: ``test_199``) and those
        collected for another action of the run (by its pinned key: ``test_247``): read once
        a proposal, for the evidence check and Cedar's ``context.evidence_count`` alike."""
        if r.evidence is None:
            horizon = self.i.now - timedelta(seconds=self.i.config.evidence_max_age_seconds)
            fresh: list[str] = []
            stale: list[str] = []
            absent: list[str] = []
            own: list[str] = []
            elsewhere: list[str] = []
            other_action: list[str] = []
            run = p.effective_run_id
            key = p.action.idempotency_key or ""  # "": no action's — an unbound upload's
            for ref in p.evidence_items:
                if not self.i.evidence_exists(ref):
                    absent.append(ref)
                    continue
                at = self.i.evidence_collected_at(ref, p.agent_id, run, key)
                if at is None:
                    # collected for another action or run, by the agents alone, or never:
                    # a probe or three say which (only for a blob that does not count)
                    if self.i.evidence_collected_at(ref, p.agent_id, run, None) is not None:
                        other_action.append(ref)
                    elif self.i.evidence_collected_at(ref, p.agent_id, None, None) is not None:
                        elsewhere.append(ref)
                    else:
                        (own if self.i.evidence_collected_at(ref, None, None, None) is not None
                         else absent).append(ref)
                elif at < horizon:
                    stale.append(ref)
                else:
                    fresh.append(ref)
            r.evidence = (fresh, stale, absent, own, elsewhere, other_action)
        return r.evidence

    def _evidence(self, p: Proposal, r: GateResult) -> CheckResult:
        assert r.spec is not None
        obliged = r.obligations.requires_evidence if r.obligations else 0
        needed = max(r.spec.requires_evidence, obliged)
        if needed == 0:
            return CheckResult(check="evidence", status=CheckStatus.SKIPPED,
                               reasons=("no evidence required",))
        fresh, stale, absent, own, elsewhere, other_action = self._evidence_of(p, r)
        if len(fresh) < needed:
            reasons = [f"{needed} fresh evidence item(s) required, {len(fresh)} given"]
            reasons += [f"evidence `{x}` is not in the evidence store" for x in absent]
            reasons += [f"evidence `{x}` was added only by agents (the proposing agent or "
                        "another) or another agent's host, no person or this agent's host"
                        for x in own]
            nowhere = " or for none" if self.i.config.evidence_requires_run else ""
            reasons += [f"evidence `{x}` was collected for another run{nowhere}, not for "
                        f"`{p.effective_run_id}`" for x in elsewhere]
            reasons += [f"evidence `{x}` was collected for another action, not for "
                        f"this one (`action.idempotency_key`)" for x in other_action]
            reasons += [f"evidence `{x}` is older than the freshness limit" for x in stale]
            # INVARIANT: a document collected for one run is no evidence in another
            # (before, any run's citation counted: tests/security/test_199)
            # nor one collected for one action evidence for another (test_247)
            code = ("evidence_other_run" if elsewhere else
                    "evidence_other_action" if other_action else "evidence_missing")
            raise _Stop(Verdict.CLARIFY, code, reasons, ["evidence"])
        return _passed("evidence")

    def _needs_approval(self, p: Proposal, r: GateResult) -> bool:
        assert r.spec is not None
        return bool(r.obligations and r.obligations.requires_approval) or (
            self._refused_here(r)
        ) or (
            r.spec.side_effect_class is SideEffectClass.IRREVERSIBLE
        ) or (
            p.action.environment in self.i.config.approval_environments
            and r.spec.side_effect_class is not SideEffectClass.READ_ONLY
        )

    def _refused_here(self, r: GateResult) -> bool:
        """A person rejected, or sent back, this exact action in the run: whatever changed
        in the run since (a note that quotes its values, a read, a fact), the identical
        action needs a person again — never runs unattended (``tests/security/test_105``).
        A read-only action is left to the policies (reading again changes nothing)."""
        assert r.spec is not None
        if r.spec.side_effect_class is SideEffectClass.READ_ONLY or self.i.refused_here is None:
            return False
        if r.refused is None:  # a refusal written before secrets were keyed holds too
            r.refused = self.i.refused_here(r.action_digest) or (
                r.legacy_digest is not None and self.i.refused_here(r.legacy_digest))
        return r.refused

    def _approval(self, p: Proposal, r: GateResult) -> CheckResult:
        if self.i.run_ended is not None:
            # INVARIANT: an approval of a workflow run covers nothing after the run's end
            # (a person's cancel): the journal refused this proposal's use of it, under its
            # writer's lock, and nothing of it was written (tests/security/test_297)
            code, why = self.i.run_ended
            raise _Stop(Verdict.DENY, code, [why])
        if not self._needs_approval(p, r):
            return CheckResult(check="approval", status=CheckStatus.SKIPPED,
                               reasons=("no approval required",))
        return self._approval_status("approval", p, r)

    def _approval_status(self, name: str, p: Proposal, r: GateResult) -> CheckResult:
        assert r.spec is not None
        changed: list[str] = []
        if self.i.approval_available(r.action_digest, self.i.now, p.agent_id, r.spec.ref,
                                     r.approval_scope, changed):
            return CheckResult(check=name, status=CheckStatus.PASS,
                               reasons=("a valid human approval covers this exact action",))
        reasons = ["a human approval of this exact action is required", *changed]
        r.reasons.extend(x for x in changed if x not in r.reasons)  # the outcome says why
        if r.legacy_digest is not None and self.i.approval_available(
                r.legacy_digest, self.i.now, p.agent_id, r.spec.ref, r.approval_scope, []):
            reasons.append(LEGACY_APPROVAL)
        return CheckResult(check=name, status=CheckStatus.PASS, code="approval_required",
                           reasons=tuple(reasons))

    def _risk(self, p: Proposal, r: GateResult) -> CheckResult:
        assert r.spec is not None
        r.risk = assess_risk(p, r.spec, self.i.config)
        if r.risk is RiskLevel.HIGH and not self._needs_approval(p, r):
            return self._approval_status("risk", p, r)
        return CheckResult(check="risk", status=CheckStatus.PASS, reasons=(f"risk `{r.risk}`",))

    def _cost_and_rate(self, p: Proposal, r: GateResult) -> CheckResult:
        assert r.spec is not None
        agent = self._agent(p)
        violation = limit_violation(self.i.config.limits, journal=self.i.journal, now=self.i.now,
                                    agent=agent, task_id=p.task_id,
                                    tenant=agent.tenant, cost=r.spec.cost)
        if violation is not None:
            raise _Stop(Verdict.DENY, violation[0], [violation[1]])
        r.caps = usage_caps(self.i.config.limits, now=self.i.now, agent=agent,
                            task_id=p.task_id, tenant=agent.tenant)
        return _passed("cost_and_rate")

    def _environment(self, p: Proposal, r: GateResult) -> CheckResult:
        env = p.action.environment
        if env not in self.i.config.environments:
            raise _Stop(Verdict.DENY, "unknown_environment",
                        [f"`action.environment`: unknown environment `{env}`"])
        if env not in self._agent(p).environments:
            raise _Stop(Verdict.DENY, "environment_out_of_scope",
                        [f"`{p.agent_id}` may not act in `{env}`"])
        return _passed("environment")

    def _idempotency(self, p: Proposal, r: GateResult) -> CheckResult:
        intent = self.i.journal.intent_for_key(r.idempotency_key)
        if intent is None and r.legacy_digest is not None:
            intent = self._legacy_intent(p, r)
        if intent is None:
            self._key_waits(p, r)
            return CheckResult(check="idempotency", status=CheckStatus.PASS,
                               reasons=(f"key `{r.idempotency_key}` is new",))
        if r.legacy_digest is not None and intent.payload.get("input_hash") == r.legacy_digest:
            r.recorded_intent_seq = intent.seq
            return CheckResult(check="idempotency", status=CheckStatus.PASS, code="recorded",
                               reasons=(f"key `{r.idempotency_key}` already has an intent, "
                                        "journaled before secret arguments were keyed (its "
                                        "unkeyed digest is this action's): the recorded "
                                        "outcome is returned, nothing runs again",))
        if intent.payload.get("input_hash") != r.input_hash:
            raise _Stop(Verdict.DENY, "idempotency_conflict",
                        [f"key `{r.idempotency_key}` was used for a different input"])
        r.recorded_intent_seq = intent.seq
        return CheckResult(check="idempotency", status=CheckStatus.PASS, code="recorded",
                           reasons=(f"key `{r.idempotency_key}` already has an intent: "
                                    "the recorded outcome is returned, nothing runs again",))

    def _key_waits(self, p: Proposal, r: GateResult) -> None:
        """Deny the agent's key for another action while an approval asked under it waits.

        INVARIANT: a key is one action, before it ran as after: other arguments under a
        key whose approval no person decided yet are the executed case's conflict — before,
        they opened a request of their own and the approvers were asked about two actions
        under one key (``tests/security/test_254``; the same arguments read the waiting
        approval: ``test_236``). One query of the derived ``undecided_approvals``."""
        key = p.action.idempotency_key
        if not key:
            return
        digests = tuple(d for d in (r.input_hash, r.legacy_digest) if d)
        asked = KeyAsked(agent=p.agent_id, tool=p.action.action_type, key=key,
                         digests=digests)
        # INVARIANT: nor once a person approved it, until it runs (its intent: above) —
        # before, an approval decided where the tool is not held, or whose process ended
        # before the run, let other arguments under the key ask anew (test_284)
        for approved, how in ((False, "waits for an approval"),
                              (True, "holds an approval, not run yet,")):
            found = self.i.journal.waiting_under_key(asked, approved=approved)
            skipped = 0
            # INVARIANT: an approval that expired (or was revoked) authorizes nothing and
            # holds nothing: read at the check, only when a row is found — before, one
            # approved `--until` a past time held the key for good (tests/security/test_306).
            # Past LAPSED_LOOKBACK lapsed ones, the next is taken as holding it (fail closed)
            while (approved and found is not None and skipped < LAPSED_LOOKBACK
                   and lapsed(self.i.journal, found, self.i.now)):
                skipped += 1
                found = self.i.journal.waiting_under_key(asked, approved=True,
                                                         offset=skipped)
            if found is not None:
                approval = found.payload.get("approval")
                named = approval.get("id") if isinstance(approval, dict) else None
                raise _Stop(Verdict.DENY, "idempotency_conflict",
                            [f"key `{r.idempotency_key}` {how} of a different input "
                             f"(`{named}`)"])

    def _legacy_intent(self, p: Proposal, r: GateResult) -> AuditEvent | None:
        """The intent of this action journaled before its secrets were keyed, under the
        key derived from its unkeyed digest (an agent's own key is the same either way):
        found, the action's key is that one — the action ran, or runs, under it."""
        assert r.legacy_digest is not None
        if p.action.idempotency_key:
            return None
        legacy_key = derive_idempotency_key(p, r.legacy_digest)
        intent = self.i.journal.intent_for_key(legacy_key)
        if intent is not None and intent.payload.get("input_hash") == r.legacy_digest:
            r.idempotency_key = legacy_key
            return intent
        return None

    #: the checks, cheapest first — the one list that names and orders them
    CHECKS: tuple[tuple[str, Check], ...] = (
        ("structure", _structure),
        ("identity", _identity),
        ("permission", _permission),
        ("policies", _policies),
        ("domain_preconditions", _domain),
        ("evidence", _evidence),
        ("approval", _approval),
        ("risk", _risk),
        ("cost_and_rate", _cost_and_rate),
        ("environment", _environment),
        ("idempotency", _idempotency),
    )


#: the names of gate 1's checks, in the order they run (as every decision records them)
CHECK_NAMES: tuple[str, ...] = tuple(name for name, _ in Gate1.CHECKS)
