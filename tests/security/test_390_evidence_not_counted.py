"""``why-allowed`` names as an action's evidence only what gate 1 counted as evidence.

Finding (the twenty-second review, provenance answers): ``why-allowed`` ("… and the
evidence it saw") listed every blob the proposal cited. Gate 1 counts a citation only when
the blob is in the store, fresh, collected by a person or the host, for the proposal's run
(or for none) and its action (``test_174``, ``test_175``, ``test_199``, ``test_247``): what
policies read as ``context.evidence_count`` and the evidence check takes. Agent mallory,
crediting in its own run ``case-b`` with a tool that asks for no evidence, cited the KYC
report kyc-service had collected for run ``case-a`` only, and a hash it made up: gate 1
counted neither, the credit executed — and ``why-allowed`` answered that it had been
allowed on case A's KYC report (and on the made-up blob).

Now the decision journals the citations it did not count (``evidence_not_counted``, only
when there is one: older journals and every citation that counted read as before), the
graph says so (``cradle:evidenceNotCounted``), and ``why-allowed`` lists the others only;
``evidence-chain`` still shows what the proposal cited. A real runtime on a temporary
home, its Oxigraph store, the named query through ``cradle-kg query``.
"""

from __future__ import annotations

from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.graph.project import node

from .answers import answer
from .homes import credit
from .mcp_http import MALLORY, two_agent_home

MADE_UP = "sha256:" + "ab" * 32


def test_why_allowed_lists_only_the_evidence_gate1_counted(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    with Runtime(home) as rt:
        other = rt.add_evidence(b"kyc of case A", kind="kyc-report", collector="kyc-service",
                                run_id="case-a")
        counted = rt.add_evidence(b"kyc of case B", kind="kyc-report",
                                  collector="kyc-service", run_id="case-b")
        done = rt.submit(credit("p-m", run="case-b", agent=MALLORY)
                         | {"evidence_refs": [other, MADE_UP, counted]})
        assert done.status.value == "executed" and done.action is not None
    [row] = answer(home, "why-allowed", action=done.action.id)
    # before: case A's report and the made-up hash too
    assert set(row["evidence"].split()) == {node("evidence", counted)[1:-1]}, row
