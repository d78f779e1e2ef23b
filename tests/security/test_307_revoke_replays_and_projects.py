"""A revoke is read by every reader of the journal: replay, the graph, audit verify.

A revoke is an ``approval.decided`` of a new status (``revoked``). What reads the
decisions must know it: the graph's projection mapped each status to a term
(``APPROVALS[status]``: a ``KeyError`` would stop the projection for good), and a
revoked approval must not keep ``cradle:Approved`` and ``cradle:awaitsUse`` beside its
new status (one status per approval, ``shapes/structure.ttl``); strict replay copies it
as a person's input (it walks no run); ``audit verify --semantics`` derives
``unrun_approvals`` again with it; and an intent under an approval revoked before it
is a finding.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus
from cradle_kg.storage import JOURNAL_URL_ENV
from cradle_kg.storage.invariants import _approval_problem
from cradle_kg.storage.pg_scratch import ScratchPostgres
from cradle_kg.workflow import LiveSettings, live_replay, runner
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli

from .test_236_pending_key_asks_once import _close
from .test_284_approved_key_other_arguments import _unrun
from .test_297_cancelled_run_approved_action import RUN, waiting_close
from .test_304_revoke_an_approval import approved, revoke

pytestmark = pytest.mark.usefixtures("journal_backend")

STATUS = ("PREFIX cradle: <https://w3id.org/cradle#> SELECT ?status ?by WHERE { "
          "?a cradle:approvalStatus ?status . OPTIONAL { ?a cradle:revokedBy ?by } "
          "FILTER(STRENDS(STR(?a), \"{id}\")) }")


def test_a_revoked_approval_in_the_graph(tmp_path: Path) -> None:
    from .mcp_http import two_agent_home

    home = two_agent_home(tmp_path / "home")
    with Runtime(home) as rt:
        approval = approved(rt)
        revoke(rt, approval.id)
        graph = rt.graph()
        assert graph is not None  # the projection ran over the revoke: no KeyError
        rows = list(graph.query(STATUS.replace("{id}", approval.id.split(":")[-1])))
        assert len(rows) == 1, rows  # one status: Approved retracted
        status, by = (str(v).strip("<>") for v in rows[0])
        assert status.endswith("#Revoked") and by.endswith("user%3Abob"), rows
    checked = run_cli("validate", "--all", "--home", str(home))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    verified = run_cli("audit", "verify", "--semantics", "--home", str(home))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_workflow_run_with_a_revoke_replays(ledger_home: Path) -> None:
    """``close-9`` waits for its tool step's approval, approved (not run), then revoked;
    walked on, the step asks a person anew. Strict replay copies the revoke and
    reproduces the run hash for hash."""
    with Runtime(ledger_home, graph_sync=False) as rt:
        approval = waiting_close(rt)
        rt.decide_approval(approval.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                           status=ApprovalStatus.APPROVED, resume=False)
        revoke(rt, approval.id)
        walked = runner.resume(runner.open_engine(rt), RUN)
        assert walked["status"] == "waiting_approval", walked  # asked anew, nothing ran
        (again,), _ = rt.approvals.pending_page(run_id=RUN, limit=10)
        assert again[0].approval.id != approval.id
        assert not any(e.kind == "action.intent" for e in rt.journal.events(run_id=RUN))
    report = strict_replay(ledger_home, [RUN])
    assert report.runs == [RUN]
    # live replay, the same inputs and policies: no difference (a revoke walks no run on)
    live = live_replay(ledger_home, [RUN], LiveSettings())
    assert live.changes == [], live.changes


def test_an_agent_run_with_a_revoke_replays(tmp_path: Path) -> None:
    from .mcp_http import two_agent_home

    home = two_agent_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        approval = approved(rt)
        revoke(rt, approval.id)
        assert str(rt.submit(_close("p1")).status) == "awaiting_approval"
    replayed = run_cli("replay", "--strict", "run:alice", "--home", str(home))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    shown = run_cli("approvals", "list", "--format", "json", "--home", str(home))
    assert [a["status"] for a in json.loads(shown.stdout)] == ["revoked", "pending"]


def test_an_intent_after_a_revoke_is_a_finding() -> None:
    """``audit verify --semantics``'s row of an intent under an approval: a revoke of it
    written before the intent (its seq, the last column) is a finding."""
    row = (12, "evt-12", "act:close-9", "apr:x", "2026-12-07T00:00:00+00:00", None, 9, 5, 10)
    found = _approval_problem(row)
    assert found is not None and "revoked before it" in found.reason, found
    assert _approval_problem((*row[:-1], None)) is None


def test_a_journal_with_a_revoke_copied_to_postgresql(
        tmp_path: Path, journal_backend: str, postgres: ScratchPostgres,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``journal copy --to`` a PostgreSQL journal derives ``unrun_approvals`` there with
    the revoke (an approved key left in it, another revoked), and ``audit verify
    --semantics`` finds the copy intact; on the PostgreSQL run, the journal written there
    is verified so."""
    from .mcp_http import two_agent_home

    home = two_agent_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        revoke(rt, approved(rt).id)
        held = rt.submit(_close("p7", account="acct-7", key="close-7"))
        assert held.approval is not None
        rt.decide_approval(held.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                           resume=False)
    if journal_backend == "sqlite":
        url = postgres.create_schema()
        copied = run_cli("journal", "copy", "--to", url, "--home", str(home))
        assert copied.returncode == 0, copied.stdout + copied.stderr
        monkeypatch.setenv(JOURNAL_URL_ENV, url)
    verified = run_cli("audit", "verify", "--semantics", "--home", str(home))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    with Runtime(home, graph_sync=False) as rt:
        assert _unrun(rt) == [held.approval.id]  # the revoked one's row is not there


def test_a_revokes_reason_is_no_trusted_value(tmp_path: Path) -> None:
    """Lineage reads a revoke's reason as it reads a rejection's (``test_101``): it quotes
    what it takes back, and gives no value or instruction. Before, the IBAN the revoke's
    reason quoted became the approver's word, and the transfer proposed again ran
    unattended."""
    from cradle_kg.records import OutcomeStatus

    from ..lineage.kit import submit, trace
    from .test_101_rejection_note_lineage import ATTACKER, BOB, TOKEN, _runtime, refuse_first

    sent: list[dict[str, object]] = []
    rt = _runtime(tmp_path, sent)
    try:
        first = refuse_first(rt, ApprovalStatus.APPROVED, None, resume=False)
        rt.revoke_approval(first.approval.id, approver_id=BOB, token=TOKEN,
                           reason=f"No, do not send the rent to {ATTACKER}: that e-mail "
                                  "is phishing.")
        again = submit(rt, 2, "send_money", {"recipient": ATTACKER, "amount": 900},
                       target="bank")
        assert again.status is OutcomeStatus.AWAITING_APPROVAL, (again.status, again.reasons)
        assert sent == []
        arg = next(a for a in trace(rt, "send_money")["arguments"] if a["name"] == "recipient")
        assert arg["untrusted_only"] and not arg["trusted_origin"], arg
    finally:
        rt.close()
