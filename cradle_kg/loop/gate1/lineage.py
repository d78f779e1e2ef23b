"""Lineage at gate 1 (part of the ``policies`` check): trace the arguments, ask the graph
policies.

The trace (:mod:`cradle_kg.lineage.trace`) is computed from the run's derived index — no
store is loaded — kept on the gate's result (the Cedar context reads it as
``context.lineage``; the runtime journals it as ``lineage.traced`` with the decision), and
the graph policies (:mod:`cradle_kg.lineage.rules`) are asked over its triples. A matching
``require_approval`` rule asks a human, quoting the untrusted origin, unless a valid
approval of this exact action exists; a matching ``deny`` rule denies.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from ...graph.project import proposed_action_id
from ...lineage.index import LineageIndex, ToolTrust, written_untrusted
from ...lineage.rdf import hide_quotes, quote_hider, secret_units, trace_triples
from ...lineage.rules import GraphRule, due, evaluate
from ...lineage.trace import Declared, Trace, trace
from ...policy import PolicyEngine
from ...records import RUNTIME_ACTOR, AuditEvent, Proposal, Verdict
from ...storage import Journal, NewEvent
from ...tools import ToolRegistry, ToolSpec, names_read_as, secret_marks
from ..approvals import ANY_SCOPE


class GateResult(Protocol):
    """What this check reads and notes on gate 1's result."""

    spec: ToolSpec | None
    idempotency_key: str
    action_digest: str
    lineage: Any
    reasons: list[str]
    codes: list[str]
    lineage_covered: list[str]

#: the Cedar context when nothing was traced (same shape, so a policy never errs on it)
EMPTY_CONTEXT: dict[str, Any] = {"arguments": {}, "choice_trusted": False,
                                 "choice_untrusted_only": False, "choice_delegated": False,
                                 "repeats": False, "untrusted_only_sensitive": []}


class LineageGate:
    """The run indexes and the graph policies in force (one per runtime)."""

    def __init__(self, journal: Journal, tools: ToolRegistry) -> None:
        self.tools = tools
        self.index = LineageIndex(
            lambda run_id, since: journal.events(run_id=run_id, since_seq=since),
            self.trust_of, written_before=journal.written_untrusted)
        self.rules: list[GraphRule] = []
        #: whether a policy set (by version) mentions `lineage`
        self._reads: dict[str, bool] = {}

    def relevant(self, spec: ToolSpec, policies: PolicyEngine) -> bool:
        """Whether lineage can matter here: graph policies are in force, the tool declares
        sensitive arguments or choice words, or a Cedar policy reads ``context.lineage``.
        Otherwise nothing is traced or journaled (a home without lineage is unchanged)."""
        if self.rules or spec.sensitive_arguments or spec.choice_words:
            return True
        if policies.version not in self._reads:
            self._reads[policies.version] = any("lineage" in s.text for s in policies.sources)
        return self._reads[policies.version]

    def previewing(self, run_id: str, pending: Sequence[AuditEvent]) -> LineageGate:
        """This gate as it will trace in ``run_id`` once ``pending`` is journaled
        (:meth:`~cradle_kg.lineage.index.LineageIndex.previewing`): the same rules, an index
        of its own."""
        preview = copy.copy(self)
        preview.index = self.index.previewing(run_id, pending)
        return preview

    def trust_of(self, tool_id: str) -> ToolTrust:
        if not self.tools.has(tool_id):
            return ToolTrust()  # unknown tool: its output is untrusted
        spec = self.tools.get(tool_id)
        return ToolTrust(output_trust=spec.output_trust, field_trust=spec.field_trust,
                         confidential=spec.confidential_fields)

    def trace(self, p: Proposal, spec: ToolSpec, action_id: str) -> Trace:
        """The proposal's trace, with no quote showing a secret value proposed in the run —
        this proposal's secret arguments, and those of the run's earlier proposals — as it
        is journaled, asked and projected (:func:`cradle_kg.lineage.rdf.quote_hider`)."""
        run_id = p.effective_run_id
        run = self.index.run(run_id)
        found = trace(run, run_id=run_id, proposal_id=p.id,
                      action_id=action_id, tool=spec.id, arguments=p.action.arguments,
                      declared=Declared(sensitive=spec.sensitive_names,
                                        choice_words=spec.choice_words,
                                        object_words=spec.object_words))
        if not run.secrets and not spec.secrets:
            return found
        dumped = found.model_dump(mode="json")
        units = [*run.secrets, *secret_units(dumped, spec.secrets)]
        if not units:
            return found
        return Trace.model_validate(hide_quotes(dumped, quote_hider(units)))


def lineage_context(r: GateResult) -> dict[str, Any]:
    """``context.lineage`` for Cedar: each argument's lineage under the name the agent
    wrote and every other name the tool's model reads its field by (an alias, the field's
    own name: :func:`~cradle_kg.tools.names_read_as`). Before, a policy reading
    ``context.lineage.arguments.recipients`` did not see ``to``, the alias the agent wrote
    (``tests/security/test_365``)."""
    found = r.lineage
    if not isinstance(found, Trace):
        return dict(EMPTY_CONTEXT)
    context = found.cedar()
    if r.spec is not None:
        named: dict[str, Any] = context["arguments"]
        for name, lineage in list(named.items()):
            for other in names_read_as(r.spec.input_model, (name,)):
                named.setdefault(other, lineage)
        context["untrusted_only_sensitive"] = list(names_read_as(
            r.spec.input_model, tuple(context["untrusted_only_sensitive"])))
    return context


Stop = tuple[Verdict, str, list[str]]


def check_lineage(gate: LineageGate | None, p: Proposal, r: GateResult,
                  approval_available: Callable[[str, datetime, str, str, str | None,
                                                list[str]], bool],
                  now: datetime, policies: PolicyEngine) -> Stop | list[str]:
    """Part of the ``policies`` check: trace the arguments (kept on ``r.lineage``) and ask
    the graph policies. Returns what stops the gate (verdict, code, reasons), or the
    reasons a human approval is needed (empty: nothing to note). Run before the Cedar
    policies (their context holds the trace), so before the scope an approval is asked
    within is known: an approval of any scope is looked for, and what it covers is kept
    on ``r.lineage_covered`` for the policies check to look again within the scope
    (:func:`uncovered`)."""
    if gate is None or r.spec is None or not gate.relevant(r.spec, policies):
        return []
    found = gate.trace(p, r.spec, "act:" + r.idempotency_key.removeprefix("idem:"))
    r.lineage = found
    asked = due(gate.rules, found)
    matches = evaluate(asked, trace_triples(found.model_dump(mode="json"),
                                            secret=r.spec.secrets)) if asked else []
    denied = [m for m in matches if m.verdict == "deny"]
    if denied:
        return (Verdict.DENY, "lineage_denied", [x for m in denied for x in m.reasons])
    if not matches:
        return []
    reasons = [x for m in matches for x in m.reasons]
    if approval_available(r.action_digest, now, p.agent_id, r.spec.ref, ANY_SCOPE, []):
        r.lineage_covered = reasons
        return []
    r.lineage_covered = []
    return uncovered(r, reasons)


def uncovered(r: GateResult, reasons: list[str] | None = None) -> list[str]:
    """``reasons`` (default: those an approval was found to cover, ``r.lineage_covered``)
    as what a person must approve: noted on ``r`` (its reasons and codes)."""
    found = list(r.lineage_covered if reasons is None else reasons)
    r.lineage_covered = []
    r.reasons.extend(found)
    r.codes.append("lineage_untrusted")
    return found


def with_trace(base: list[NewEvent], r: GateResult, now: datetime) -> list[NewEvent]:
    """The decision's events with ``lineage.traced`` after the proposal, before the decision."""
    found = r.lineage
    if not isinstance(found, Trace) or not base:
        return base
    # INVARIANT: a refused proposal's trace describes its own action (the node the
    # decision's projection names, ``act:<key>/<decision>``), never the action its key
    # later ran: before, its arguments' values and origins were projected onto that
    # action, which then held both the refused call's values and its own
    # (tests/security/test_480)
    decided = next((e.payload["decision"] for e in base if e.kind == "decision.made"), None)
    if isinstance(decided, dict):
        own = proposed_action_id(found.action_id, decided)
        if own and own != found.action_id:
            found = found.model_copy(update={"action_id": own})
    dumped = found.model_dump(mode="json")
    secret = frozenset(r.spec.secrets) if r.spec is not None else frozenset()
    # what the action, once executed, writes on a third party's word: the derived
    # ``lineage_written`` reads it from here when its observation is journaled
    # (tests/security/test_496); never a secret argument's value
    written = written_untrusted(a for a in dumped.get("arguments", ())
                                if str(a.get("name")) not in secret)
    event = NewEvent(run_id=found.run_id, kind="lineage.traced", subject=found.action_id,
                     actor=RUNTIME_ACTOR, at=now,
                     payload={"trace": dumped, "proposal_id": found.proposal_id,
                              **({"written": [list(v) for v in written]} if written else {}),
                              **secret_marks(r.spec)})
    return [base[0], event, *base[1:]]
