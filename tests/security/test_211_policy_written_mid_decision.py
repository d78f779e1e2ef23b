"""A forbid written while a decision is being made governs that decision, not the next.

Attack (beside ``test_200``): the runtime reads the home's policy files and
``config.json`` again before each decision and decides under that snapshot. A decision
still being made when the operator writes a ``forbid`` (an incident: credits frozen) — its
gate 1 running a slow domain validator, the graph's lineage check, a busy machine — was
journaled and executed under the set the forbid had already replaced, after it: the
credit ran although the freeze was in the files (and, on another worker, already
journaled as activated) before the decision was written.

What must hold: a decision is written only under the policies and configuration in force
when it is written — the files are looked at again before its first event is journaled,
and a set that changed meanwhile makes the proposal be decided again under it (here:
denied by the freeze, nothing executed, the new set journaled before the decision).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Proposal, Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.loop.gate1.findings import Finding

from .homes import FREEZE, credit
from .mcp_http import fresh

pytestmark = pytest.mark.usefixtures("journal_backend")

def test_a_forbid_written_mid_decision_denies_it(tmp_path: Path) -> None:
    home = fresh(tmp_path, "home")
    with Runtime(home, graph_sync=False) as rt:
        assert rt.submit(credit("c0")).status is OutcomeStatus.EXECUTED

        def operator_writes_a_forbid(p: Proposal, spec: object) -> list[Finding]:
            incident = home / "policies" / "incident.cedar"
            if not incident.exists():  # while gate 1 runs, after the set was read
                incident.write_text(FREEZE)
            return []

        rt.register_validator("demo.ledger.credit", operator_writes_a_forbid, name="slow")
        out = rt.submit(credit("c1"))
        assert out.status is OutcomeStatus.DENIED, out  # before: executed under the old set
        assert any("credits are frozen" in r for r in out.reasons), out
        kinds = [e.kind for e in rt.journal.events(run_id=out.run_id)]
        assert "action.intent" not in kinds
        activated = [e for e in rt.journal.events() if e.kind == "policyset.activated"]
        decided = [e for e in rt.journal.events() if e.kind == "decision.made"]
        assert out.decision is not None
        assert out.decision.policy_version == activated[-1].payload["version"]
        assert decided[-1].seq > activated[-1].seq


def test_a_permission_removed_mid_decision_denies_it(tmp_path: Path) -> None:
    home = fresh(tmp_path, "home")
    with Runtime(home, graph_sync=False) as rt:
        assert rt.submit(credit("c0")).status is OutcomeStatus.EXECUTED

        def operator_narrows(p: Proposal, spec: object) -> list[Finding]:
            config = load_config(home / "config.json")
            if any(q.subject == AGENT for q in config.permissions):
                save_config(home / "config.json", config.model_copy(update={
                    "permissions": tuple(q for q in config.permissions
                                         if q.subject != AGENT)}))
            return []

        rt.register_validator("demo.ledger.credit", operator_narrows, name="slow")
        out = rt.submit(credit("c1"))
        assert out.status is OutcomeStatus.DENIED, out  # before: executed
        kinds = [e.kind for e in rt.journal.events(run_id=out.run_id)]
        assert "action.intent" not in kinds
