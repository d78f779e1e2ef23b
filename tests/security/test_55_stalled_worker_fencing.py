"""A worker that is not dead but stalled: fencing its intent against a takeover.

Worker A journals an intent and is then stopped for real (``SIGSTOP``) — right after the
intent, before the call; or after the tool's effect, before the observation is journaled.
Worker B (its own runtime, connection and lease) runs a recovery pass while A is stopped.

* A stopped process keeps its lease on both journals (its ``flock`` on SQLite, its
  session advisory lock on PostgreSQL: the kernel still answers for its sockets), so B
  leaves the intent alone (``in_flight``) and A, resumed, finishes it: one call, one
  outcome.
* On PostgreSQL the lease can be lost while its process lives: the server drops the
  lease's session (an administrator's ``pg_terminate_backend``, ``idle_session_timeout``
  — the lease's connection is idle for the worker's whole life —, a fault on that one
  connection). B then reconciles A's intent: a human task for a tool of class ``none``, a
  same-key retry for a keyed one. A, resumed, must not call the tool after that, nor write
  an observation or an outcome over B's: one ``run.outcome`` per action, the one B wrote.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import demo_ledger
from cradle_kg.storage import JOURNAL_URL_ENV, open_home_journal
from cradle_kg.storage.pg_connect import LEASE_LOCKS, connect, lease_key
from tests.conftest import make_config, proposal
from tests.racers import ForkedPython

pytestmark = pytest.mark.usefixtures("journal_backend")

REPO = Path(__file__).resolve().parents[2]

#: a tool of idempotency class ``none`` without lookup (the mail that must not leave
#: twice): registered by worker A and by worker B
MAILER = """
from tests.mailer_tool import register_mailer
"""

#: worker A: submits one proposal and stops itself (SIGSTOP) at ``stall``
WORKER_A = """
import json, os, signal, sys
from pathlib import Path
from cradle_kg import Runtime
home, prop, stall = Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
rt = Runtime(home, graph_sync=False)
exec((home / "mailer.py").read_text())

def stop():
    (home / "stalled").write_text(rt.lease.id)
    os.kill(os.getpid(), signal.SIGSTOP)  # resumed by the test's SIGCONT

if stall == "after_intent":  # the intent is durable; the tool is not called yet
    rt.listeners.append(lambda events: [stop() for e in events if e.kind == "action.intent"])
    register_mailer(rt)
else:  # the tool's effect happened; its answer is not journaled yet
    register_mailer(rt, after_effect=stop)
    real = rt.tools._impls["demo.ledger.credit"]
    def credit(call):
        out = real(call)
        stop()
        return out
    rt.tools._impls["demo.ledger.credit"] = credit
out = rt.submit(prop)
print(json.dumps({"status": out.status.value, "reasons": list(out.reasons)}))
"""

#: worker B in a process of its own: a recovery pass that stops itself (SIGSTOP) after it
#: read the journal and asked the ledger's lookup, before it writes what it found
WORKER_B = """
import json, os, signal, sys
from pathlib import Path
from cradle_kg import Runtime
home = Path(sys.argv[1])
rt = Runtime(home, recover=False, graph_sync=False)
exec((home / "mailer.py").read_text())
register_mailer(rt)
real = rt.tools._lookups["demo.ledger.credit"]
def lookup(call):
    found = real(call)
    (home / "b-stalled").write_text("1")
    os.kill(os.getpid(), signal.SIGSTOP)
    return found
rt.tools._lookups["demo.ledger.credit"] = lookup
print(json.dumps([item.to_dict() for item in rt.recover().items]))
"""

MAIL = proposal("p-mail", "test.mailer", {"value": "hello"}, agent="agent:tester",
                target="test:inbox")
CREDIT = proposal("p-credit", "demo.ledger.credit", {"account": "acct-1", "amount": 70})
TOOLS = {"mailer": MAIL, "credit": CREDIT}


@pytest.fixture
def stall_home(home: Path) -> Path:
    (home / "config.json").write_text(make_config().model_dump_json())
    (home / "mailer.py").write_text(MAILER)
    return home


def _stopped(pid: int) -> bool:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0] in ("T", "t")


def _start_and_stall(home: Path, *args: str, script: str = WORKER_A,
                     marker: str = "stalled") -> ForkedPython:
    """``python -c script home *args``, forked from the fork server (a process of its own,
    stopped for real; no interpreter start to pay), once it has stopped itself."""
    env = {k: v for k, v in os.environ.items() if k != "CRADLE_CRASH_AT"}
    child = ForkedPython(script, [str(home), *args], env=env, cwd=REPO)
    deadline = time.monotonic() + 120
    while not ((home / marker).exists() and _stopped(child.pid)):
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            out, err = child.communicate()
            pytest.fail(f"the worker did not stall: rc={child.returncode} {out} {err}")
        time.sleep(0.02)
    return child


def _drop_lease_session(worker: str) -> None:
    """What the server does to a lease whose session it drops while the worker lives."""
    key = lease_key(worker) & 0xFFFFFFFF
    with connect(os.environ[JOURNAL_URL_ENV]) as conn:
        rows = conn.execute(
            "SELECT pid, objid FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND classid = %s AND objsubid = 2", (LEASE_LOCKS,)).fetchall()
        pids = [pid for pid, objid in rows if int(objid) == key]
        assert len(pids) == 1, rows
        assert conn.execute("SELECT pg_terminate_backend(%s)", (pids[0],)).fetchone() == (True,)
        while conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                           (pids[0],)).fetchone() != (0,):
            time.sleep(0.01)


def _resume(child: ForkedPython) -> Any:
    os.kill(child.pid, signal.SIGCONT)
    out, err = child.communicate(timeout=120)
    lines = out.strip().splitlines()
    assert lines, f"the worker printed nothing: rc={child.returncode} {err[-2000:]}"
    return json.loads(lines[-1])


def _calls(home: Path, tool: str) -> int:
    """Calls the tool received, by its own record (every call has the one key)."""
    if tool == "mailer":
        outbox = home / "outbox.txt"
        return len(outbox.read_text().splitlines()) if outbox.exists() else 0
    return sum(Counter(k for k, _op in demo_ledger(home).applied_calls()).values())


def _recover_with_b(home: Path) -> list[str]:
    with Runtime(home, recover=False, graph_sync=False) as b:
        namespace: dict[str, Any] = {}
        exec((home / "mailer.py").read_text(), namespace)
        namespace["register_mailer"](b)
        return [item.result for item in b.recover().items]


def _outcomes(home: Path) -> tuple[list[str], list[str], list[str], bool]:
    """The statuses of the action's ``run.outcome``s, its transitions, the codes of the
    human tasks opened, and whether the chain is intact."""
    with open_home_journal(home) as journal:
        intent = journal.events_of_kind("action.intent")[0]
        outcomes = [e.payload["outcome"]["status"] for e in journal.events_for_subject(
            intent.subject) if e.kind == "run.outcome"]
        transitions = [e.kind for e in journal.events()
                       if e.kind.startswith("transition.")
                       and e.payload.get("action_id") == intent.subject]
        tasks = [e.payload["code"] for e in journal.events_of_kind("human_task.opened")]
        assert journal.dangling_intents() == []
        return outcomes, transitions, tasks, journal.verify().intact


@pytest.mark.parametrize("stall", ["after_intent", "after_effect"])
@pytest.mark.parametrize("tool", ["mailer", "credit"])
def test_a_stopped_worker_keeps_its_lease_and_finishes_alone(
        stall_home: Path, tool: str, stall: str) -> None:
    child = _start_and_stall(stall_home, json.dumps(TOOLS[tool]), stall)
    try:
        assert _recover_with_b(stall_home) == ["in_flight"]
    finally:
        answer = _resume(child)
    assert answer["status"] == "executed", answer
    assert _calls(stall_home, tool) == 1
    outcomes, transitions, tasks, intact = _outcomes(stall_home)
    assert outcomes == ["executed"] and transitions == ["transition.committed"] and intact
    assert tasks == []


#: what B does about A's intent once A's lease is gone, and the one outcome that stands:
#: the mail has no lookup (a human task); the ledger's lookup has no trace of the key
#: before the call (a same-key retry), and finds the entry after it
TAKEOVER = {("mailer", "after_intent"): ("human_task", "escalated"),
            ("mailer", "after_effect"): ("human_task", "escalated"),
            ("credit", "after_intent"): ("retried", "executed"),
            ("credit", "after_effect"): ("reconciled", "executed")}


#: a live process cannot lose its flock (shown by the test above): PostgreSQL only
@pytest.mark.parametrize("journal_backend", ["postgresql"], indirect=True)
@pytest.mark.parametrize("stall", ["after_intent", "after_effect"])
@pytest.mark.parametrize("tool", ["mailer", "credit"])
def test_a_stalled_worker_whose_lease_was_taken_over_does_not_act_again(
        stall_home: Path, journal_backend: str, tool: str, stall: str) -> None:
    child = _start_and_stall(stall_home, json.dumps(TOOLS[tool]), stall)
    try:
        _drop_lease_session((stall_home / "stalled").read_text())
        result, status = TAKEOVER[tool, stall]
        assert _recover_with_b(stall_home) == [result]
    finally:
        answer = _resume(child)
    outcomes, transitions, tasks, intact = _outcomes(stall_home)
    figures = {"answer": answer, "calls": _calls(stall_home, tool), "outcomes": outcomes,
               "transitions": transitions, "tasks": tasks, "intact": intact}
    # B's outcome stands, alone; A answers with it and says why
    assert outcomes == [status], figures
    assert answer["status"] == status, figures
    assert any("lease" in r for r in answer["reasons"]), figures
    assert len(transitions) <= 1 and intact, figures
    # a call made before the stall is the only call A makes; A makes none after it
    # (credit: B's same-key retry reaches the ledger, which keeps one entry per key)
    calls = {("mailer", "after_intent"): 0, ("mailer", "after_effect"): 1,
             ("credit", "after_intent"): 1, ("credit", "after_effect"): 1}
    assert figures["calls"] == calls[tool, stall], figures
    if tool == "credit":
        assert all(n == 1 for n in demo_ledger(stall_home).entries_per_key().values())
    # the mail A sent before its stall is not lost: a second task says what the tool
    # answered, beside recovery's (which could not know); A sent nothing after it
    expected_tasks = {("mailer", "after_intent"): ["reconcile_idempotency_none"],
                      ("mailer", "after_effect"): ["reconcile_idempotency_none",
                                                   "superseded_call"]}
    assert tasks == expected_tasks.get((tool, stall), []), figures


@pytest.mark.parametrize("journal_backend", ["postgresql"], indirect=True)
def test_a_recovery_pass_that_stalls_does_not_write_over_the_worker_that_came_back(
        stall_home: Path, journal_backend: str) -> None:
    """The other way round: B's pass reads A's intent (A stopped in its call, its lease
    gone), asks the ledger, and stops before it writes; A comes back and settles the
    action; then B resumes. B's reconciled observation is refused: one outcome, A's."""
    a = _start_and_stall(stall_home, json.dumps(CREDIT), "after_effect")
    b: ForkedPython | None = None
    try:
        _drop_lease_session((stall_home / "stalled").read_text())
        b = _start_and_stall(stall_home, script=WORKER_B, marker="b-stalled")
        answer = _resume(a)
    finally:
        if a.poll() is None:
            _resume(a)
        items = _resume(b) if b is not None else []
    outcomes, transitions, tasks, intact = _outcomes(stall_home)
    figures = {"a": answer, "b": items, "calls": _calls(stall_home, "credit"),
               "outcomes": outcomes, "transitions": transitions, "tasks": tasks}
    assert answer["status"] == "executed" and answer["reasons"] == [], figures
    assert [i["result"] for i in items] == ["in_flight"], figures
    assert "was not journaled" in items[0]["detail"], figures
    assert outcomes == ["executed"] and transitions == ["transition.committed"], figures
    assert figures["calls"] == 1 and tasks == [] and intact, figures


# --- a lease renewed by another thread of the same process --------------------------------

def test_an_intent_under_a_lease_another_thread_renewed_is_not_called(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads of one process share its lease. When one of them finds it lost and takes a
    new one, an intent another thread wrote under the old lease is recovery's to reconcile:
    that thread must not call the tool under the new lease — checking only that *a* lease
    is held let it call while another worker could be reconciling the same intent."""
    from cradle_kg.loop import gateway

    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        namespace: dict[str, Any] = {}
        exec(MAILER, namespace)
        namespace["register_mailer"](rt)
        written_under = []

        def renewed_by_another_thread(name: str) -> None:
            if name == "after_intent":  # the intent names the old lease; it is replaced
                old = rt.lease
                written_under.append(old.id)
                rt.context.renew_lease(old)

        monkeypatch.setattr(gateway, "crashpoint", renewed_by_another_thread)
        out = rt.submit(proposal("p-1", "test.mailer", {"value": "hello"},
                                 agent="agent:tester", target="test:mail"))
        assert not (home / "outbox.txt").exists(), "the tool ran under the lost lease"
        assert out.status != "executed"
        assert written_under and rt.lease.id != written_under[0]
        intents = rt.journal.events_of_kind("action.intent")
        assert [e.payload["worker"] for e in intents] == written_under  # left to recovery


def test_a_lost_lease_is_renewed_once_whichever_threads_find_it_lost(home: Path) -> None:
    """Two threads finding the same lease lost take one new lease between them: the second
    does not release the lease the first just took (its intents would look dead)."""
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        lost = rt.lease
        rt.context.renew_lease(lost)
        first = rt.lease
        rt.context.renew_lease(lost)  # the second thread, with the lease it saw lost
        assert rt.lease is first and first.id != lost.id
        assert rt.journal.worker_alive(first.id)
