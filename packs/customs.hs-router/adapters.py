"""customs.hs-router's example identities and example runner (``pack run``, the demo).

The pack's tools, verifiers and validators are declarations in ``governed.py``, named by
the manifest and registered when the pack loads. Here: the identities the examples use
(``identities``), and ``run_example(runtime, input)`` (the manifest's ``example_runner``),
which submits the classification and, when it executed, the finalization; it returns the
pack-level result and the governed outcomes behind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cradle_kg import Runtime
from cradle_kg.packs.sdk import (
    Agent,
    ApprovalStatus,
    Approver,
    Outcome,
    OutcomeStatus,
    Permission,
    RuntimeConfig,
    content_hash,
    token_hash,
)

from .governed import TOOL_CLASSIFY, TOOL_FINALIZE, precheck

#: the example identities: a broker agent acting for a declarant; a customs officer
#: approves restricted-goods finalizations. Tokens are example-only.
AGENT = "agent:customs-broker"
DECLARANT = "user:declarant"
OFFICER = "user:customs-officer"
EXAMPLE_TOKENS = {OFFICER: "example-token-customs-officer"}
ENVIRONMENT = "local"


# --- identities (example and demo only; a real home configures its own) -------------------

def identities() -> RuntimeConfig:
    """The agents, permissions and approvers the examples use."""
    return RuntimeConfig(
        agents=(Agent(id=AGENT, role="customs-broker", acts_for=DECLARANT,
                      environments=(ENVIRONMENT,)),),
        permissions=(Permission(subject=AGENT, action_type="customs.*",
                                resource_selector="*"),),
        approvers=(Approver(id=OFFICER, role="customs-officer",
                            scopes=("dual_use_export_control",),
                            token_hash=token_hash(EXAMPLE_TOKENS[OFFICER])),),
    )


def merged(base: RuntimeConfig, extra: RuntimeConfig) -> RuntimeConfig:
    """``base`` plus what ``extra`` declares and ``base`` does not (by id)."""
    return base.merged_with(extra)


def ensure_identities(runtime: Runtime) -> None:
    if runtime.config.agent(AGENT) is None:
        runtime.configure(merged(runtime.config, identities()))


# --- the example runner ------------------------------------------------------------------

def _summary(outcome: Outcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    d = outcome.decision
    return {
        "outcome": str(outcome.status),
        "proposal_id": outcome.proposal_id,
        "decision_id": d.id if d else None,
        "verdict": str(d.verdict) if d else None,
        "reasons": list(outcome.reasons),
        "missing_facts": list(d.missing_facts) if d else [],
        "policy_ids": [p.policy_id for p in d.policy_results] if d else [],
        "policy_version": d.policy_version if d else None,
        "pack_versions": list(d.pack_versions) if d else [],
        "approval_id": outcome.approval.id if outcome.approval else None,
        "verification": str(outcome.verification.status) if outcome.verification else None,
        "replayed": outcome.replayed,
    }


def classify_proposal(line: Mapping[str, Any], *, task: str) -> dict[str, Any]:
    return {"id": f"{task}-classify", "task_id": task, "agent_id": AGENT,
            "on_behalf_of": DECLARANT,
            "action": {"action_type": TOOL_CLASSIFY, "target": f"goods-line:{task}",
                       "arguments": dict(line), "environment": ENVIRONMENT}}


def finalize_proposal(line: Mapping[str, Any], result: Mapping[str, Any], *, task: str,
                      declaration_id: str) -> dict[str, Any]:
    """The agent files what the classification observation says, claims and all."""
    permits = sorted(result.get("permits_required") or [])
    arguments = {
        "declaration_id": declaration_id, "goods_line": dict(line),
        "status": result["status"], "hs_code": result.get("hs_code"),
        "permitted_to_finalize": bool(result.get("permitted_to_finalize")),
        "permits_required": permits, "permits_required_count": len(permits),
        "missing_facts_count": len(result.get("missing_facts") or []),
        "decision_digest": result["decision_digest"],
    }
    action: dict[str, Any] = {"action_type": TOOL_FINALIZE,
                              "target": f"declaration:{declaration_id}",
                              "arguments": arguments, "environment": ENVIRONMENT}
    if permits:
        action["risk_level"] = "high"  # export-controlled goods: integrity rule 2 applies
    # the goods line's attribute facts, as candidates the filing's verifier confirms (or
    # contradicts) from what it reads back: the only way a fact becomes Verified (issue 14)
    facts = [{"subject": f"goods-line:{task}", "predicate": str(f["predicate"]),
              "object": f["value"], "source": str((f.get("sources") or ["extractor"])[0])}
             for f in result.get("facts") or [] if isinstance(f.get("value"), str | int | float)]
    return {"id": f"{task}-finalize", "task_id": task, "agent_id": AGENT,
            "on_behalf_of": DECLARANT, "action": action, "facts": facts}


_FIELDS = ("status", "hs_code", "candidate_hs_codes", "product_type", "missing_facts",
           "permits_required", "permitted_to_finalize", "conflicts", "legal_sources")


def run_example(runtime: Runtime, payload: Mapping[str, Any]) -> dict[str, Any]:
    """One goods line through the governed loop: classify, then (if it ran) finalize.

    ``payload`` is a goods line (``description``, ``facts``, ``declared_at``) with optional
    ``task`` (the run's task id), ``declaration_id`` and ``finalize`` (default true).
    """
    return governed_line(runtime, payload)[0]


def governed_line(runtime: Runtime, payload: Mapping[str, Any]
                  ) -> tuple[dict[str, Any], Outcome, Outcome | None]:
    """``run_example``'s result, with the classify and finalize outcomes themselves."""
    ensure_identities(runtime)
    line = {k: payload[k] for k in ("description", "facts", "declared_at") if k in payload}
    task = str(payload.get("task") or "customs-" + content_hash(line)[7:19])
    declaration_id = str(payload.get("declaration_id") or "decl-" + task.removeprefix(
        "customs-"))
    classified = runtime.submit(classify_proposal(line, task=task))
    finalized: Outcome | None = None
    result: dict[str, Any]
    if classified.status is OutcomeStatus.EXECUTED and classified.observation is not None:
        observed = dict(classified.observation.output)
        result = {k: observed.get(k) for k in _FIELDS}
        result["decision_digest"] = observed.get("decision_digest")
        if payload.get("finalize", True):
            finalized = runtime.submit(finalize_proposal(line, observed, task=task,
                                                         declaration_id=declaration_id))
    else:
        # gate 1 stopped it: the runtime's decision is the answer; the descriptive fields
        # (candidates, product type) are the same deterministic pre-check the gate ran
        gate = precheck(line)
        decision = classified.decision
        missing = list(decision.missing_facts) if decision else []
        if classified.status is OutcomeStatus.NEEDS_CLARIFICATION and missing != list(
                gate.missing_facts):
            raise RuntimeError(f"the gate's missing facts {missing} differ from the pack's "
                               f"{list(gate.missing_facts)}")
        status = {OutcomeStatus.NEEDS_CLARIFICATION: "needs_clarification",
                  OutcomeStatus.DENIED: "rejected"}.get(classified.status,
                                                        str(classified.status))
        said = gate.model_dump(mode="json")
        result = {"status": status, "hs_code": None,
                  "candidate_hs_codes": list(gate.candidate_hs_codes),
                  "product_type": gate.product_type, "missing_facts": missing,
                  "permits_required": list(gate.permits_required),
                  "permitted_to_finalize": False,
                  "conflicts": said["conflicts"], "legal_sources": said["legal_sources"],
                  "decision_digest": None}
    result.update({
        "pack": next((p for p in runtime.pack_versions if p.startswith("customs.hs-router@")),
                     None),
        "run_id": classified.run_id,
        "declaration_id": declaration_id if finalized is not None else None,
        "finalized": finalized is not None and finalized.status is OutcomeStatus.EXECUTED,
        "governed": {"classify": _summary(classified), "finalize": _summary(finalized)},
    })
    return result, classified, finalized


def approve_finalization(runtime: Runtime, waiting: Outcome, *, approver: str = OFFICER,
                         token: str | None = None) -> Outcome:
    """A second identity (the customs officer) approves a restricted-goods filing."""
    if waiting.approval is None:
        raise ValueError("this finalization does not await an approval")
    _approval, resumed = runtime.decide_approval(
        waiting.approval.id, approver_id=approver,
        token=token if token is not None else EXAMPLE_TOKENS[approver],
        status=ApprovalStatus.APPROVED)
    if resumed is None:
        raise RuntimeError("the approved finalization did not resume")
    return resumed

