"""Crash recovery with real SIGKILLs: a child process dies at each crash point, the parent
restarts the runtime and checks that nothing was lost and nothing happened twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.crashpoints import CRASH_POINTS
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, demo_ledger, ledger_for
from cradle_kg.runs import show_run
from cradle_kg.storage import open_home_journal

from .conftest import proposal
from .inprocess import run_cli
from .racers import run_python

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

#: the child: submit proposals (approving the ones that wait, as a second identity),
#: logging every event the journal acknowledged, until the crash point kills it
CHILD = """
import json, sys
from cradle_kg import Runtime
from cradle_kg.records import ApprovalStatus
home, proposals, log_path, token = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
rt = Runtime(home)
extra = sys.argv[5] if len(sys.argv) > 5 else ""
if extra:
    exec(open(extra).read())
log = open(log_path, "a")
def remember(events):
    for e in events:
        log.write(f"{e.seq} {e.hash}\\n")
        log.flush()
rt.listeners.append(remember)
for p in proposals:
    out = rt.submit(p)
    if out.status.value == "awaiting_approval":
        rt.decide_approval(out.approval.id, approver_id="user:bob", token=token,
                           status=ApprovalStatus.APPROVED)
print("survived")
"""


REPO = Path(__file__).resolve().parents[1]


def run_child(home: Path, proposals: list[dict[str, Any]], *, crash_at: str | None,
              extra: Path | None = None) -> tuple[subprocess.CompletedProcess[str], Path]:
    log = home / f"acked-{len(list(home.glob('acked-*')))}.log"
    env = {k: v for k, v in os.environ.items() if k != "CRADLE_CRASH_AT"}
    if crash_at:
        env["CRADLE_CRASH_AT"] = crash_at
    args = [str(home), json.dumps(proposals), str(log), DEMO_TOKENS[APPROVER]]
    if extra is not None:
        args.append(str(extra))
    # python -c CHILD, forked from the fork server: its own process, a real SIGKILL
    done = run_python(CHILD, args, env=env, cwd=REPO, timeout=120)
    return done, log


def assert_no_lost_events(rt: Runtime, log: Path) -> None:
    """Every event the dead process had written is there, with the same hash; chain intact."""
    assert rt.journal.verify().intact
    acked = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    by_seq = {e.seq: e.hash for e in rt.journal.events()}
    assert all(by_seq.get(int(seq)) == h for seq, h in acked)


def assert_one_effect_per_key(home: Path) -> None:
    ledger = demo_ledger(home)
    calls = Counter(key for key, _op in ledger.applied_calls())
    assert all(n == 1 for n in calls.values()), calls
    assert all(n == 1 for n in ledger.entries_per_key().values())


CREDIT = proposal("p-credit", "demo.ledger.credit", {"account": "acct-1", "amount": 70})
CLOSE = proposal("p-close", "demo.ledger.close_account", {"account": "acct-9"})
#: what recovery must find and do, per crash point
EXPECTED = {
    "before_intent": None,  # nothing of the execution was written: nothing dangles
    "after_intent": "retried",  # the lookup has no trace of the key: same key, again
    "during_call": "reconciled",  # the effect is there: the lookup finds it
    "after_call": "reconciled",
    "before_verification": "reconciled",  # the observation was journaled
    "before_commit": "reconciled",
}


def test_every_crash_point_has_an_expectation() -> None:
    assert set(EXPECTED) == set(CRASH_POINTS)


@pytest.mark.parametrize("tool_proposal", [CREDIT, CLOSE], ids=["credit", "close_account"])
@pytest.mark.parametrize("point", CRASH_POINTS)
def test_sigkill_at_each_point_then_restart(home: Path, point: str,
                                            tool_proposal: dict[str, Any]) -> None:
    done, log = run_child(home, [tool_proposal], crash_at=point)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert "survived" not in done.stdout
    with Runtime(home) as rt:  # the restart reconciles before anything else
        report = rt.recovery
        assert report is not None
        assert_no_lost_events(rt, log)
        if EXPECTED[point] is None:
            assert report.dangling == 0
            assert not any(e.kind == "action.intent" for e in rt.journal.events())
        else:
            assert [i.result for i in report.items] == [EXPECTED[point]]
            assert report.items[0].outcome == "executed"
        assert rt.journal.dangling_intents() == []
        # the agent submits again after the restart: one effect, never two
        again = rt.submit(tool_proposal)
        assert again.status is OutcomeStatus.EXECUTED
        assert again.replayed is (EXPECTED[point] is not None)
        intents = [e for e in rt.journal.events() if e.kind == "action.intent"]
        assert len(intents) == 1
        outcomes = [e for e in rt.journal.events_for_subject(intents[0].subject)
                    if e.kind == "run.outcome"]
        assert len(outcomes) == 1
        if EXPECTED[point] is not None:
            assert outcomes[0].payload.get("reconciled") is True
        assert rt.journal.verify().intact
    assert_one_effect_per_key(home)
    ledger = demo_ledger(home)
    if tool_proposal is CREDIT:
        assert ledger.balance("acct-1") == 70
    else:
        assert ledger.account_status("acct-9") == "closed"


def test_retry_after_crash_reuses_the_intent_and_its_key(home: Path) -> None:
    done, _ = run_child(home, [CREDIT], crash_at="after_intent")
    assert done.returncode == -signal.SIGKILL
    with Runtime(home) as rt:
        intents = [e for e in rt.journal.events() if e.kind == "action.intent"]
        retries = [e for e in rt.journal.events() if e.kind == "action.retry"]
        assert len(intents) == 1 and len(retries) == 1
        assert retries[0].subject == intents[0].subject
        assert retries[0].payload["idempotency_key"] == intents[0].payload["action"][
            "idempotency_key"]
    keys = [k for k, _ in demo_ledger(home).applied_calls()]
    assert keys == [intents[0].payload["action"]["idempotency_key"]]


def test_three_workers_recovering_a_dead_workers_intent_at_once_recover_it_once(
        home: Path) -> None:
    """A worker dies after its intent; three live workers (each its own runtime,
    connection and lease) run a recovery pass at the same moment. The passes are
    serialised across the journal and the dangling intents are read again under the
    lock, so exactly one retries the call (same key) and the others find nothing left."""
    import threading

    done, _ = run_child(home, [CREDIT], crash_at="after_intent")
    assert done.returncode == -signal.SIGKILL
    workers = [Runtime(home, recover=False, graph_sync=False) for _ in range(3)]
    try:
        assert all(len(w.journal.dangling_intents()) == 1 for w in workers)
        barrier = threading.Barrier(3)
        reports: list[Any] = [None] * 3

        def recover(n: int) -> None:
            barrier.wait(60)
            reports[n] = workers[n].recover()

        threads = [threading.Thread(target=recover, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        results = sorted(tuple(i.result for i in r.items) for r in reports)
        assert results == [(), (), ("retried",)], results
        journal = workers[0].journal
        assert len(journal.events_of_kind("action.retry")) == 1
        intent = journal.events_of_kind("action.intent")[0]
        assert [e.subject for e in journal.events_of_kind("run.outcome")
                if e.subject == intent.subject] == [intent.subject]
        assert journal.dangling_intents() == [] and journal.verify().intact
    finally:
        for w in workers:
            w.close()
    assert_one_effect_per_key(home)


#: a tool of idempotency class "none", without lookup, that appends to a file: the kind of
#: connector that sends the mail; registered by the child and by the restarted runtime
NONE_TOOL = """
from tests.mailer_tool import register_mailer
register_mailer(rt)
"""


def _mailer_home(home: Path) -> Path:
    from .conftest import make_config

    (home / "config.json").write_text(make_config().model_dump_json())
    script = home / "mailer.py"
    script.write_text(NONE_TOOL)
    return script


def test_idempotency_none_is_never_replayed_but_opens_a_human_task(home: Path) -> None:
    script = _mailer_home(home)
    mail = proposal("p-mail", "test.mailer", {"value": "hello"}, agent="agent:tester",
                    target="test:inbox")
    done, log = run_child(home, [mail], crash_at="during_call", extra=script)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert (home / "outbox.txt").read_text().count("\n") == 1
    with Runtime(home) as rt:
        # the mailer is not registered at start: its intent is left for later, untouched
        assert rt.recovery is not None and [i.result for i in rt.recovery.items] == ["deferred"]
        namespace: dict[str, Any] = {"rt": rt}
        exec(script.read_text(), namespace)
        report = rt.recover()
        assert [i.result for i in report.items] == ["human_task"]
        assert "never replayed" in report.items[0].detail
        assert_no_lost_events(rt, log)
        assert rt.journal.dangling_intents() == []
        summary, events = show_run(rt.journal, "run:task-p-mail")
        assert summary.status == "escalated" and len(summary.human_tasks) == 1
        task = next(e for e in events if e.kind == "human_task.opened")
        assert task.payload["code"] == "reconcile_idempotency_none"
        # submitting again returns the escalation; the mail does not leave twice
        again = rt.submit(mail)
        assert again.status is OutcomeStatus.ESCALATED and again.replayed
        assert rt.recover().dangling == 0
    assert (home / "outbox.txt").read_text().count("\n") == 1


def test_cli_recover_reports_what_it_did(home: Path) -> None:
    done, _ = run_child(home, [CREDIT], crash_at="after_call")
    assert done.returncode == -signal.SIGKILL
    # the crash is a real process; the command that recovers from it runs in this one
    args = ("recover", "--home", str(home), "--format", "json")
    first = run_cli(*args, env={"CRADLE_CRASH_AT": None})
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["dangling"] == 1 and report["summary"]["reconciled"] == 1
    assert report["items"][0]["outcome"] == "executed"
    second = run_cli(*args, env={"CRADLE_CRASH_AT": None})
    assert json.loads(second.stdout)["dangling"] == 0
    assert_one_effect_per_key(home)


BLOCKING_CHILD = """
import sys, time
from pathlib import Path
from cradle_kg import Runtime

home = Path(sys.argv[1])
rt = Runtime(home)
spec = rt.tools.get("demo.ledger.credit")
real = rt.tools._impls["demo.ledger.credit"]
def slow(call):
    while not (home / "go").exists():  # held in the call until the parent lets go
        time.sleep(0.01)
    return real(call)
rt.tools._impls["demo.ledger.credit"] = slow
print(rt.submit({"id": "p", "task_id": "t", "agent_id": "agent:ledger-assistant",
                 "action": {"action_type": "demo.ledger.credit", "target": "ledger:a",
                            "arguments": {"account": "a", "amount": 5}}}).status.value)
"""


def test_an_intent_in_flight_in_a_live_process_is_left_alone(home: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", BLOCKING_CHILD, str(home)],
                             stdout=subprocess.PIPE, text=True)
    try:
        with Runtime(home, recover=False) as rt:
            while not rt.journal.dangling_intents():
                assert child.poll() is None
            report = rt.recover()
            assert [i.result for i in report.items] == ["in_flight"]
            assert not [e for e in rt.journal.events() if e.kind == "action.retry"]
        (home / "go").touch()
        out, _ = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert out.strip() == "executed"
    assert_one_effect_per_key(home)
    with Runtime(home) as rt:
        assert rt.recovery is not None and rt.recovery.dangling == 0


def test_a_dead_workers_lease_does_not_protect_its_intent(home: Path,
                                                          journal_backend: str) -> None:
    done, _ = run_child(home, [CREDIT], crash_at="during_call")
    assert done.returncode == -signal.SIGKILL
    if journal_backend == "sqlite":
        leases = list((home / "workers").glob("*.lock"))
        assert leases  # the dead process could not clean up: the kernel dropped its lock
    with open_home_journal(home) as journal:  # the intent names a worker that is dead
        worker = journal.events_of_kind("action.intent")[0].payload["worker"]
        assert isinstance(worker, str) and not journal.worker_alive(worker)
    with Runtime(home) as rt:
        assert rt.recovery is not None
        assert [i.result for i in rt.recovery.items] == ["reconciled"]


def test_nothing_dangling_costs_one_query(rt: Runtime) -> None:
    rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 1}))
    assert rt.recover().dangling == 0 and rt.recover().items == []
    assert ledger_for(rt).balance("a") == 1
