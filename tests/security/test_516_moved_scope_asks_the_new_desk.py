"""A proposal waiting on an approval asked within a scope the policies no longer name.

Finding (left by ``test_412``, twenty-third review): after the policies send an action
to another desk (``@approval_scope`` changed from ``account_closure`` to ``treasury``, or
to an approver holding ``*``), a proposal that waited on an approval asked within the old
scope kept waiting on it: submitted again (what MCP's answer and ``--approval-wait`` tell
an agent to do), it was answered with that approval, within the old scope. The treasury
was never asked: nobody there may decide it (``outside_scopes``), and the closures desk
still could — its approval then covered nothing (``test_412``) and only after it the
treasury was asked; its rejection ended the proposal. A closures desk since dissolved
left the proposal waiting for good (but for an approver holding ``*``).

Now: a pending approval is waited on only while the policies ask within the scope it was
asked within. Otherwise the proposal asks anew within the scope now, and the new request
supersedes the old one (``"supersedes"`` in its payload): the old approval reads
``expired`` (the reason names the new one and its scope), it leaves the old desk's inbox
and its agent's waiting count, and the old desk's decision is refused; the new desk
decides, and the action runs once. The supersede claims the old approval's decision key,
so a decision of it racing the new request lands on one side only. Both journals.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.loop.approvals import ApprovalState
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import ApprovalStatus, OutcomeStatus, Proposal
from tests.inprocess import run_cli

from .test_412_approval_scope_changed import CAROL, TREASURER, _credit, _home, _intents, _policy

pytestmark = pytest.mark.usefixtures("journal_backend")


def _pending_ids(rt: Runtime) -> list[str]:
    rows, _ = rt.approvals.pending_page()
    return [st.approval.id for st, _ in rows]


@pytest.mark.parametrize("now_asked_within", ["treasury", None])
def test_a_waiting_proposal_asks_the_desk_the_policies_name_now(
        ledger_home: Path, now_asked_within: str | None) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        first = rt.submit(_credit("p-1", 1))
        assert first.status is OutcomeStatus.AWAITING_APPROVAL and first.approval is not None
        old = first.approval.id
        assert first.approval.scope == "account_closure"

        _policy(ledger_home, now_asked_within)  # the incident: sent to another desk
        again = rt.submit(_credit("p-1", 1))  # the agent asks again, as MCP tells it to
        assert again.status is OutcomeStatus.AWAITING_APPROVAL
        assert again.approval is not None
        assert again.approval.scope == now_asked_within, again  # before: account_closure
        new = again.approval.id
        assert new != old
        assert any(old in r and "account_closure" in r for r in again.reasons), again.reasons
        # asking again reads the new one (no third request)
        third = rt.submit(_credit("p-1", 1))
        assert third.approval is not None and third.approval.id == new

        # the old one is closed: out of the inbox, expired, its desk's decision refused
        assert _pending_ids(rt) == [new]
        shown = rt.approvals.get(old).approval
        assert shown.status is ApprovalStatus.EXPIRED and new in (shown.reason or "")
        with pytest.raises(ApprovalError):
            rt.decide_approval(old, approver_id=CAROL, token="carol",
                               status=ApprovalStatus.REJECTED, reason="not ours any more")
        assert rt.journal.waiting(AGENT) == 1

        who, token = ((TREASURER, "tess") if now_asked_within
                      else (APPROVER, DEMO_TOKENS[APPROVER]))
        _, done = rt.decide_approval(new, approver_id=who, token=token,
                                     status=ApprovalStatus.APPROVED)
        assert done is not None and done.status is OutcomeStatus.EXECUTED
        assert _intents(rt) == 1
        assert rt.resume("r-closing") == []
        assert _intents(rt) == 1
        report = rt.journal.verify(semantics=True)
        assert report.intact, report


def test_an_old_desk_decision_that_landed_first_is_kept(ledger_home: Path) -> None:
    """Decided before the proposal came again: the old desk's approval covers nothing
    (``test_412``) and the proposal asks the new desk; nothing is superseded."""
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        first = rt.submit(_credit("p-1", 1))
        assert first.approval is not None
        _policy(ledger_home, "treasury")
        approved, done = rt.decide_approval(first.approval.id, approver_id=CAROL,
                                            token="carol", status=ApprovalStatus.APPROVED)
        assert approved.status is ApprovalStatus.APPROVED
        assert done is not None and done.status is OutcomeStatus.AWAITING_APPROVAL
        assert done.approval is not None and done.approval.scope == "treasury"
        assert rt.approvals.get(first.approval.id).approval.status is ApprovalStatus.APPROVED
        assert _intents(rt) == 0
        assert rt.journal.verify(semantics=True).intact


def test_an_agent_at_its_waiting_limit_is_asked_again_in_place(ledger_home: Path) -> None:
    """The new request takes the closed one's place in the agent's waiting count: an agent
    at its limit is not refused for it, and waits on as many as before."""
    _home(ledger_home)
    config = load_config(ledger_home / "config.json")
    save_config(ledger_home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update={"waiting_per_agent": 1})}))
    with Runtime(ledger_home, graph_sync=False) as rt:
        first = rt.submit(_credit("p-1", 1))
        assert first.approval is not None and rt.journal.waiting(AGENT) == 1
        _policy(ledger_home, "treasury")
        again = rt.submit(_credit("p-1", 1))
        assert again.approval is not None and again.approval.scope == "treasury"
        assert rt.journal.waiting(AGENT) == 1


def test_the_closed_approval_in_the_graph(ledger_home: Path) -> None:
    """Projected as any decision: the old approval `Expired` (one status), the new one
    `Pending`; the graph validates and the journal verifies with its semantics."""
    _home(ledger_home)
    with Runtime(ledger_home) as rt:
        first = rt.submit(_credit("p-1", 1))
        assert first.approval is not None
        _policy(ledger_home, "treasury")
        again = rt.submit(_credit("p-1", 1))
        assert again.approval is not None
        graph = rt.graph()
        assert graph is not None
        for approval, status in ((first.approval.id, "Expired"), (again.approval.id, "Pending")):
            rows = list(graph.query(
                "PREFIX c: <https://w3id.org/cradle#> SELECT ?s WHERE { ?a c:approvalStatus "
                f"?s FILTER(STRENDS(STR(?a), \"{approval.split(':')[-1]}\")) }}"))
            assert [str(r[0]).strip("<>").rsplit("#", 1)[-1] for r in rows] == [status], rows
    checked = run_cli("validate", "--all", "--home", str(ledger_home))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    verified = run_cli("audit", "verify", "--semantics", "--home", str(ledger_home))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_decision_landing_during_the_new_request_lands_alone(
        ledger_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The old desk decides the approval after the proposal read it pending, before the
    new request is written: the request (which claims the approval's decision key) is
    refused under the writer's lock, nothing of it written; decided again, the proposal
    finds the approval decided — covering nothing — and asks the new desk, closing
    nothing. One decision of the old approval in the journal, a person's."""
    from cradle_kg.loop.approval_flow import ApprovalFlow

    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        first = rt.submit(_credit("p-1", 1))
        assert first.approval is not None
        old = first.approval.id
        _policy(ledger_home, "treasury")
        read = ApprovalFlow._pending
        landed: list[bool] = []

        def racing(self: ApprovalFlow, proposal: Proposal, digest: str) -> list[ApprovalState]:
            found = read(self, proposal, digest)
            if found and not landed:
                landed.append(True)
                rt.decide_approval(old, approver_id=CAROL, token="carol",
                                   status=ApprovalStatus.APPROVED, resume=False)
            return found

        monkeypatch.setattr(ApprovalFlow, "_pending", racing)
        again = rt.submit(_credit("p-1", 1))
        assert landed
        assert again.approval is not None and again.approval.scope == "treasury"
        decided = [e for e in rt.journal.events() if e.kind == "approval.decided"
                   and e.payload["approval_id"] == old]
        assert [(e.actor, e.payload["status"]) for e in decided] == [(CAROL, "approved")]
        assert rt.approvals.get(old).approval.status is ApprovalStatus.APPROVED
        assert _intents(rt) == 0
        assert rt.journal.verify(semantics=True).intact


def test_a_call_again_under_the_key_asks_the_new_desk_once(ledger_home: Path) -> None:
    """The agent's key: a call again under it (another proposal id, as MCP's calls are)
    closes the key's old approval and asks the new desk; the key's first proposal, asked
    again, reads the new approval; the credit runs once."""
    _home(ledger_home)

    def keyed(pid: str) -> dict[str, object]:
        call = _credit(pid, 1)
        action = call["action"]
        assert isinstance(action, dict)
        return {**call, "action": {**action, "idempotency_key": "credit-closing-7"}}

    with Runtime(ledger_home, graph_sync=False) as rt:
        first = rt.submit(keyed("p-1"))
        assert first.approval is not None
        _policy(ledger_home, "treasury")
        again = rt.submit(keyed("p-2"))
        assert again.approval is not None and again.approval.scope == "treasury", again
        assert rt.approvals.get(first.approval.id).approval.status is ApprovalStatus.EXPIRED
        back = rt.submit(keyed("p-1"))
        assert back.approval is not None and back.approval.id == again.approval.id
        assert _pending_ids(rt) == [again.approval.id]
        _, done = rt.decide_approval(again.approval.id, approver_id=TREASURER, token="tess",
                                     status=ApprovalStatus.APPROVED)
        assert done is not None and done.status is OutcomeStatus.EXECUTED
        rt.resume("r-closing")
        assert _intents(rt) == 1
        assert rt.journal.verify(semantics=True).intact


CLOSE_DESK = """
@id("closures-desk")
@requires_approval("true")
{scope}permit(principal, action, resource)
when {{ context.tool == "demo.ledger.close_account" }};
"""


def test_a_workflow_run_whose_step_asks_anew_replays(ledger_home: Path) -> None:
    """A workflow run's tool step waits within the closures desk; the policies move it to
    the treasury; walked on, the step asks anew and closes the old approval. Strict
    replay reproduces the run hash for hash (the closing is written in the walk's own
    append), and a live replay with the same inputs finds no change."""
    from cradle_kg.workflow import LiveSettings, live_replay, runner
    from cradle_kg.workflow.replay import strict_replay

    from .homes import replace_file
    from .test_297_cancelled_run_approved_action import RUN, waiting_close

    _home(ledger_home)
    desk = ledger_home / "policies" / "closures.cedar"
    replace_file(desk, CLOSE_DESK.format(scope='@approval_scope("account_closure")\n'))
    with Runtime(ledger_home, graph_sync=False) as rt:
        old = waiting_close(rt)
        assert old.scope == "account_closure", old
        replace_file(desk, CLOSE_DESK.format(scope='@approval_scope("treasury")\n'))
        walked = runner.resume(runner.open_engine(rt), RUN)
        assert walked["status"] == "waiting_approval", walked
        assert rt.approvals.get(old.id).approval.status is ApprovalStatus.EXPIRED
        (again,), _ = rt.approvals.pending_page(run_id=RUN, limit=10)
        assert again[0].approval.scope != "account_closure"
    report = strict_replay(ledger_home, [RUN])
    assert report.runs == [RUN]
    live = live_replay(ledger_home, [RUN], LiveSettings())
    assert live.changes == [], live.changes
