"""Human approvals: each guarantee has a test that tries to break it, and fails to."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, REQUESTER, demo_ledger
from cradle_kg.errors import ApprovalError
from cradle_kg.records import Agent, ApprovalStatus, Permission
from cradle_kg.runs import show_run

from .conftest import Clock, make_config, proposal
from .inprocess import run_cli
from .racers import ForkedPython, race, racer, racing_context

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

BOB = DEMO_TOKENS[APPROVER]
REPO = Path(__file__).resolve().parents[1]
#: an approver who may approve only within scope `payments`
CAROL = Approver(id="user:carol", scopes=("payments",), token_hash=token_hash("carol"))
#: the agent can try to approve its own action with a valid token
SELF = Approver(id=AGENT, token_hash=token_hash("agent"))
#: an agent acting for bob, the approver: bob's approvals never cover its actions
BOBS_AGENT = Agent(id="agent:bobs", acts_for=APPROVER, permitted_scopes=("ledger:admin",))


def _config() -> Any:
    base = make_config()
    return base.model_copy(update={
        "approvers": (*base.approvers, CAROL, SELF),
        "agents": (*base.agents, BOBS_AGENT),
        "permissions": (*base.permissions, Permission(
            subject=BOBS_AGENT.id, action_type="demo.ledger.*", resource_selector="ledger:*")),
    })


@pytest.fixture
def art(home: Path, clock: Clock) -> Iterator[Runtime]:
    (home / "config.json").write_text(_config().model_dump_json())
    runtime = Runtime(home, clock=clock)
    yield runtime
    runtime.close()


def close(pid: str, account: str = "acct-9", *, task: str | None = None,
          agent: str = AGENT, **extra: Any) -> dict[str, Any]:
    return proposal(pid, "demo.ledger.close_account", {"account": account},
                    task_id=task or "task-" + pid, agent=agent, **extra)


def closes(home: Path) -> list[str]:
    return [k for k, op in demo_ledger(home).applied_calls()
            if op == "close"]


def _wait(rt: Runtime, pid: str, **kw: Any) -> str:
    out = rt.submit(close(pid, **kw))
    assert out.status is OutcomeStatus.AWAITING_APPROVAL and out.approval is not None
    return out.approval.id


def test_self_approval_is_refused(art: Runtime) -> None:
    aid = _wait(art, "p")
    for who, token in ((AGENT, "agent"), (REQUESTER, DEMO_TOKENS[REQUESTER])):
        with pytest.raises(ApprovalError, match="cannot approve"):
            art.decide_approval(aid, approver_id=who, token=token,
                                status=ApprovalStatus.APPROVED)
    assert art.approvals.get(aid).approval.status is ApprovalStatus.PENDING
    refused = art.journal.events_of_kind("approval.refused")
    assert [e.actor for e in refused] == [AGENT, REQUESTER]
    assert closes(art.home.root) == []


def test_a_reusable_approval_never_covers_the_approvers_own_agent(art: Runtime,
                                                                   clock: Clock) -> None:
    aid = _wait(art, "p")
    art.decide_approval(aid, approver_id=APPROVER, token=BOB, status=ApprovalStatus.APPROVED,
                        once=False, until=clock.now + timedelta(hours=1))
    # same exact action in the same run, proposed by an agent that acts for bob: not covered
    out = art.submit(close("p-bobs", agent=BOBS_AGENT.id, task="task-p", attempt=1))
    assert out.status is OutcomeStatus.AWAITING_APPROVAL
    assert len(closes(art.home.root)) == 1


def test_approve_once_is_consumed_by_the_first_execution(art: Runtime) -> None:
    aid = _wait(art, "p1")
    _, first = art.decide_approval(aid, approver_id=APPROVER, token=BOB,
                                   status=ApprovalStatus.APPROVED, once=True)
    assert first is not None and first.status is OutcomeStatus.EXECUTED
    assert art.approvals.get(aid).approval.consumed
    # the same exact action again in the same run (a new attempt): the approval is spent
    second = art.submit(close("p1", attempt=1))
    assert second.status is OutcomeStatus.AWAITING_APPROVAL
    assert second.approval is not None and second.approval.id != aid
    assert len(closes(art.home.root)) == 1
    assert len(art.journal.events_of_kind("approval.consumed")) == 1


RACER = """
import json, sys, time
from pathlib import Path
from cradle_kg import Runtime

home, pid, attempt = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
rt = Runtime(home)
(home / f"ready-{pid}").touch()
while not (home / "go").exists():
    time.sleep(0.001)
p = {"id": pid, "task_id": "task-p0", "attempt": attempt, "agent_id": "agent:ledger-assistant",
     "action": {"action_type": "demo.ledger.close_account", "target": "ledger:acct-9",
                "arguments": {"account": "acct-9"}}}
print(rt.submit(p).status.value)
"""


def test_approve_once_raced_by_two_processes_executes_once(art: Runtime, home: Path) -> None:
    aid = _wait(art, "p0")
    art.decide_approval(aid, approver_id=APPROVER, token=BOB, status=ApprovalStatus.APPROVED,
                        once=True, resume=False)
    env = {k: v for k, v in os.environ.items() if k != "CRADLE_CRASH_AT"}
    # two attempts of the approved action in its run, two keys, one approve-once
    # processes of their own, forked from the fork server (no interpreter start each)
    racers = [ForkedPython(RACER, [str(home), f"r{i}", str(i + 1)], env=env, cwd=REPO)
              for i in range(2)]
    try:
        while not all((home / f"ready-r{i}").exists() for i in range(2)):
            assert all(r.poll() is None for r in racers)
        (home / "go").touch()
        results = sorted(r.communicate(timeout=120)[0].strip() for r in racers)
    finally:
        for r in racers:
            if r.poll() is None:
                r.kill()
    assert results == ["awaiting_approval", "executed"]
    assert len(closes(home)) == 1
    assert len(art.journal.events_of_kind("approval.consumed")) == 1


_DECIDE_ROUNDS = 40


def _decide_racer(home: str, worker: int, approvals: list[str], barrier: Any,
                  out: Any) -> None:
    """One of two workers deciding every approval at once: worker 0 always approves;
    worker 1 approves on even rounds (a double click from two hosts), rejects on odd ones."""
    with Runtime(home, graph_sync=False) as rt:
        said = []
        for n, aid in enumerate(approvals):
            status = (ApprovalStatus.APPROVED if worker == 0 or n % 2 == 0
                      else ApprovalStatus.REJECTED)
            barrier.wait(60)
            try:
                rt.decide_approval(aid, approver_id=APPROVER, token=BOB, status=status,
                                   reason="no")
                said.append(str(status))
            except ApprovalError:
                said.append("refused")
    out.put((worker, said))


def test_an_approval_decided_by_two_workers_at_once_is_decided_once(art: Runtime,
                                                                     home: Path) -> None:
    """Two processes decide the same pending approval at the same moment, 40 times. Each
    read it pending; the decision is written only over the events it was decided on
    (``if_last``), so one is written and the other reads again and is refused. Before,
    both were written: an approval approved *and* rejected, its action executed with a
    rejection recorded after it (or executed after one)."""
    approvals = [_wait(art, f"d{n}", account=f"acct-{n}") for n in range(_DECIDE_ROUNDS)]
    ctx = racing_context()
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [racer(ctx, _decide_racer, str(home), w, approvals, barrier, out)
             for w in range(2)]
    said = dict(race(procs, out))
    decided: dict[str, list[str]] = {}
    for event in art.journal.events_of_kind("approval.decided"):
        decided.setdefault(event.payload["approval_id"], []).append(event.payload["status"])
    assert all(len(v) == 1 for v in decided.values()), "an approval was decided twice"
    assert sorted(decided) == sorted(approvals)
    for n, aid in enumerate(approvals):  # the one written is the one that was not refused
        answers = [said[0][n], said[1][n]]
        assert answers.count("refused") == 1, (n, answers)
        assert decided[aid] == [a for a in answers if a != "refused"]
    executed = {e.run_id for e in art.journal.events_of_kind("action.intent")}
    approved = {st.approval.run_id for st in art.approvals.all()
                if st.approval.status is ApprovalStatus.APPROVED}
    assert executed == approved  # a rejected action never ran; an approved one ran once
    assert len(closes(home)) == len(approved)
    assert art.journal.verify().intact


def _resume_racer(home: str, runs: list[str], barrier: Any, out: Any) -> None:
    """One of three workers resuming every run at once (``runs resume`` on three hosts)."""
    with Runtime(home, graph_sync=False) as rt:
        said = []
        for run in runs:
            barrier.wait(60)
            said.append([str(o.status) for o in rt.resume(run)])
    out.put(said)


@pytest.mark.slow
def test_three_workers_resuming_a_run_at_once_run_it_once_and_ask_nobody_again(
        art: Runtime, home: Path) -> None:
    """An approve-once, decided without resuming; then three processes resume the run at
    the same moment, 30 times. One executes and consumes the approval; the others answer
    from its record. Before, a resume that saw the approval in gate 1 and found it
    consumed at execution asked for a *new* approval of the action that had just run —
    a stale request in the inbox (4-5 runs of 30)."""
    runs = []
    for n in range(30):
        aid = _wait(art, f"r{n}", account=f"acct-{n}")
        art.decide_approval(aid, approver_id=APPROVER, token=BOB,
                            status=ApprovalStatus.APPROVED, once=True, resume=False)
        runs.append(f"run:task-r{n}")
    ctx = racing_context()
    barrier, out = ctx.Barrier(3), ctx.Queue()
    procs = [racer(ctx, _resume_racer, str(home), runs, barrier, out) for _ in range(3)]
    said = race(procs, out)
    for n in range(len(runs)):
        answers = sorted(s for worker in said for s in worker[n])
        assert answers.count("executed") >= 1, (n, answers)
        assert set(answers) <= {"executed", "in_progress"}, (n, answers)
    journal = art.journal
    assert sorted(e.run_id for e in journal.events_of_kind("action.intent")) == sorted(runs)
    assert len(journal.events_of_kind("approval.consumed")) == len(runs)
    asked = [e.run_id for e in journal.events_of_kind("approval.requested")]
    assert sorted(asked) == sorted(runs), "a resume asked again for an action that ran"
    assert len(closes(home)) == len(runs)
    assert journal.verify().intact


def test_an_expiry_in_the_past_is_refused(art: Runtime, clock: Clock) -> None:
    aid = _wait(art, "p")
    with pytest.raises(ApprovalError, match="already past"):
        art.decide_approval(aid, approver_id=APPROVER, token=BOB,
                            status=ApprovalStatus.APPROVED, until=clock.now - timedelta(1))
    assert art.journal.events_of_kind("approval.refused")[0].payload["reason"] == (
        "the expiry time is already past")


def test_an_approval_that_expires_before_execution_is_not_used(art: Runtime,
                                                               clock: Clock) -> None:
    aid = _wait(art, "p")
    approval, _ = art.decide_approval(aid, approver_id=APPROVER, token=BOB,
                                      status=ApprovalStatus.APPROVED, once=False,
                                      until=clock.now + timedelta(hours=1), resume=False)
    assert approval.expires_at is not None
    clock.now += timedelta(hours=2)  # the run resumes too late
    assert art.resume("run:task-p") == []
    out = art.submit(close("p"))
    assert out.status is OutcomeStatus.AWAITING_APPROVAL
    assert closes(art.home.root) == []
    from cradle_kg.loop.approvals import effective_status

    expired = art.approvals.get(aid).approval
    assert expired.status is ApprovalStatus.APPROVED  # what was decided ...
    assert effective_status(expired, clock.now) is ApprovalStatus.EXPIRED  # ... as of now


def test_an_approval_does_not_authorize_a_different_action(art: Runtime) -> None:
    aid = _wait(art, "p", account="acct-9")
    art.decide_approval(aid, approver_id=APPROVER, token=BOB, status=ApprovalStatus.APPROVED,
                        once=False, scope="account_closure", resume=False)
    # same run, one argument changed
    other = art.submit(close("p-other", account="acct-8", task="task-p"))
    assert other.status is OutcomeStatus.AWAITING_APPROVAL
    assert other.approval is not None and other.approval.action_digest != (
        art.approvals.get(aid).approval.action_digest)
    assert closes(art.home.root) == []


def test_approvers_are_authenticated(art: Runtime) -> None:
    aid = _wait(art, "p")
    with pytest.raises(ApprovalError, match="not a configured approver"):
        art.decide_approval(aid, approver_id="user:mallory", token="x",
                            status=ApprovalStatus.APPROVED)
    with pytest.raises(ApprovalError, match="does not authenticate"):
        art.decide_approval(aid, approver_id=APPROVER, token="demo-token-guess",
                            status=ApprovalStatus.APPROVED)
    assert [e.payload["claimed_approver"] for e in
            art.journal.events_of_kind("approval.refused")] == ["user:mallory", APPROVER]
    assert art.approvals.get(aid).approval.status is ApprovalStatus.PENDING


def test_request_view_decision_and_delay_are_journaled(art: Runtime, clock: Clock) -> None:
    aid = _wait(art, "p")
    clock.now += timedelta(minutes=5)
    art.view_approval(aid, viewer=APPROVER)
    clock.now += timedelta(minutes=10)
    art.decide_approval(aid, approver_id=APPROVER, token=BOB, status=ApprovalStatus.APPROVED)
    digest = art.approvals.get(aid).approval.action_digest
    trail = art.journal.events_for_subject("approval:" + digest)
    assert [e.kind for e in trail] == ["approval.requested", "approval.viewed",
                                       "approval.decided", "approval.consumed"]
    assert trail[1].actor == APPROVER and trail[2].actor == APPROVER
    assert trail[2].payload["delay_seconds"] == 15 * 60
    assert art.journal.verify().intact


def test_a_view_is_journaled_when_it_is_news(art: Runtime, clock: Clock) -> None:
    """A viewer's first look, and their first after the action's events moved on (a
    refused attempt, the decision); looks in between are answered, not journaled — the
    trail says who saw the approval in which state (``tests/security/test_47``)."""
    aid = _wait(art, "p")
    digest = art.approvals.get(aid).approval.action_digest

    def trail() -> list[tuple[str, str]]:  # who, for the people's events
        return [(e.kind, e.actor if e.kind.endswith(("viewed", "refused", "decided")) else "")
                for e in art.journal.events_for_subject("approval:" + digest)]

    for _ in range(5):
        assert art.view_approval(aid, viewer=APPROVER).status is ApprovalStatus.PENDING
        art.view_approval(aid, viewer="user:carol")
    with pytest.raises(ApprovalError):
        art.decide_approval(aid, approver_id=REQUESTER, token=DEMO_TOKENS[REQUESTER],
                            status=ApprovalStatus.APPROVED)
    for _ in range(3):
        art.view_approval(aid, viewer=APPROVER)
    clock.now += timedelta(minutes=1)
    art.decide_approval(aid, approver_id=APPROVER, token=BOB, status=ApprovalStatus.APPROVED)
    for _ in range(3):
        assert art.view_approval(aid, viewer=APPROVER).status is ApprovalStatus.APPROVED
    assert trail() == [("approval.requested", ""), ("approval.viewed", APPROVER),
                       ("approval.viewed", "user:carol"), ("approval.refused", REQUESTER),
                       ("approval.viewed", APPROVER), ("approval.decided", APPROVER),
                       ("approval.consumed", ""), ("approval.viewed", APPROVER)]


def test_view_is_news_reads_back_to_the_last_change_only() -> None:
    from cradle_kg.loop.approvals import view_is_news
    from cradle_kg.records import AuditEvent

    def event(seq: int, kind: str, actor: str, approval: str = "apr:1") -> AuditEvent:
        return AuditEvent(seq=seq, id=f"evt-{seq}", run_id="r", kind=kind, subject="approval:d",
                          actor=actor, at=datetime(2026, 1, 1, tzinfo=UTC),
                          payload={"approval_id": approval}, payload_hash="h",
                          prev_hash="p", hash="h")

    asked = event(1, "approval.requested", "runtime")
    assert view_is_news([asked], "apr:1", "bob")
    seen = [asked, event(2, "approval.viewed", "bob"), event(3, "approval.viewed", "ann")]
    assert not view_is_news(seen, "apr:1", "bob")
    assert view_is_news(seen, "apr:2", "bob")  # another approval of the same action
    assert view_is_news(seen, "apr:1", "carl")
    assert view_is_news([*seen, event(4, "approval.refused", "eve")], "apr:1", "bob")


def test_a_journal_with_repeated_views_still_replays_and_verifies(art: Runtime) -> None:
    """Journals written before views were deduplicated hold one per poll: replay copies
    them as recorded inputs (``INPUT_KINDS``), and reaches the recorded head."""
    from cradle_kg.storage import NewEvent
    from cradle_kg.workflow import strict_replay
    from cradle_kg.workflow.replay import INPUT_KINDS

    assert "approval.viewed" in INPUT_KINDS
    aid = _wait(art, "p")
    state = art.approvals.get(aid).approval
    art.context.append([NewEvent(run_id=state.run_id, kind="approval.viewed",
                                 subject="approval:" + state.action_digest, actor=APPROVER,
                                 at=art.clock(), payload={"approval_id": aid})
                        for _ in range(4)])  # as the code before wrote four polls
    art.view_approval(aid, viewer=APPROVER)  # not news: not journaled
    art.decide_approval(aid, approver_id=APPROVER, token=BOB, status=ApprovalStatus.APPROVED)
    assert len(art.journal.events_of_kind("approval.viewed")) == 4
    head = art.journal.head()[1]
    art.close()
    report = strict_replay(art.home.root)
    assert report.head_hash == head and "run:task-p" in report.runs


@pytest.mark.parametrize(("status", "ended", "word"), [
    (ApprovalStatus.REJECTED, "denied", "rejected"),
    (ApprovalStatus.CHANGES_REQUESTED, "repair", "changes requested"),
])
def test_reject_and_request_changes_end_the_wait(art: Runtime, status: ApprovalStatus,
                                                 ended: str, word: str) -> None:
    aid = _wait(art, "p")
    approval, outcome = art.decide_approval(aid, approver_id=APPROVER, token=BOB,
                                            status=status, reason="wrong account")
    assert approval.status is status and outcome is None
    summary, events = show_run(art.journal, "run:task-p")
    assert summary.status == ended
    last = [e for e in events if e.kind == "run.outcome"][-1].payload["outcome"]
    assert last["reasons"] == [f"{word} by `{APPROVER}`: wrong account"]
    assert art.resume("run:task-p") == []
    with pytest.raises(ApprovalError, match="already"):
        art.decide_approval(aid, approver_id=APPROVER, token=BOB,
                            status=ApprovalStatus.APPROVED)
    assert closes(art.home.root) == []


def cli(*args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (tests/inprocess): no crash point, the token if given."""
    return run_cli(*args, env={"CRADLE_CRASH_AT": None, "CRADLE_APPROVER_TOKEN": token})


def test_a_waiting_run_survives_the_process_and_continues_after_a_cli_approval(
        home: Path) -> None:
    with Runtime(home) as rt:  # the process that submitted goes away: nothing waits in it
        aid = _wait(rt, "p")
    done = cli("approvals", "approve", aid, "--as", APPROVER, "--home", str(home), token=BOB)
    assert done.returncode == 0, done.stderr
    assert "continued: executed" in done.stdout
    assert len(closes(home)) == 1
    runs = json.loads(cli("runs", "list", "--home", str(home), "--format", "json").stdout)
    assert {r["run_id"]: r["status"] for r in runs}["run:task-p"] == "executed"


def test_a_waiting_run_resumes_from_a_new_process_with_runs_resume(home: Path) -> None:
    with Runtime(home) as rt:
        aid = _wait(rt, "p")
    with Runtime(home) as rt:  # approved where the run could not continue by itself
        rt.decide_approval(aid, approver_id=APPROVER, token=BOB,
                           status=ApprovalStatus.APPROVED, resume=False)
    assert closes(home) == []
    done = cli("runs", "resume", "run:task-p", "--home", str(home))
    assert done.returncode == 0, done.stderr
    assert [o["status"] for o in json.loads(done.stdout)] == ["executed"]
    assert len(closes(home)) == 1
    again = cli("runs", "resume", "run:task-p", "--home", str(home))
    assert json.loads(again.stdout) == []  # the approve-once is spent
    assert len(closes(home)) == 1


def test_scope_is_checked_and_a_scoped_approval_covers_the_same_action_until_expiry(
        art: Runtime, clock: Clock) -> None:
    aid = _wait(art, "p1")
    with pytest.raises(ApprovalError, match="scope `account_closure`"):
        art.decide_approval(aid, approver_id=CAROL.id, token="carol",
                            status=ApprovalStatus.APPROVED, scope="account_closure")
    _, first = art.decide_approval(aid, approver_id=APPROVER, token=BOB,
                                   status=ApprovalStatus.APPROVED, once=False,
                                   scope="account_closure",
                                   until=clock.now + timedelta(hours=1))
    assert first is not None and first.status is OutcomeStatus.EXECUTED
    # the same exact action again in its run: covered, again and again, until the expiry
    for attempt in (1, 2):
        again = art.submit(close("p1", attempt=attempt))
        assert again.status is OutcomeStatus.EXECUTED and not again.replayed
    assert len(closes(art.home.root)) == 3
    assert art.approvals.get(aid).approval.scope == "account_closure"
    # ... never in another run, which asks for its own approval
    assert art.submit(close("p-other-run")).status is OutcomeStatus.AWAITING_APPROVAL
    clock.now += timedelta(hours=1)
    assert art.submit(close("p1", attempt=3)).status is OutcomeStatus.AWAITING_APPROVAL
    assert len(closes(art.home.root)) == 3
