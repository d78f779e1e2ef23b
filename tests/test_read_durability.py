"""The durability of a read (issue 12): a read-only call's one transaction is committed
without waiting for the disk flush (``read_commit: "deferred"``, the default) — kept when
the process is killed, flushed by the next flushed commit or by the journal's timer within
``deferred_flush_ms`` — while a write keeps its intent flushed before the call and its
outcome flushed before the answer. ``read_commit: "flushed"`` waits for the read's flush.

The SIGKILL test kills a real child the moment it has printed a read's answer, on both
journals, and finds every event of the read in the journal, the chain and the derived
state intact, and the same submission answered from the record.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.config import RuntimeConfig
from cradle_kg.errors import InputError
from cradle_kg.loop.context import LoopContext
from cradle_kg.storage import Journal, NewEvent, SqliteJournal

from .conftest import make_config, proposal

REPO = Path(__file__).resolve().parents[1]
BALANCE = proposal("p-read", "demo.ledger.balance", {"account": "acct-1"})
CREDIT = proposal("p-write", "demo.ledger.credit", {"account": "acct-1", "amount": 5})
T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Flushes:
    """Wraps a journal's ``append``: the kinds of each transaction and its ``flush``."""

    def __init__(self, journal: Journal) -> None:
        self.calls: list[tuple[list[str], bool]] = []
        self._append = journal.append

    def __call__(self, events: Any, *, flush: bool = True) -> Any:
        self.calls.append(([e.kind for e in events], flush))
        return self._append(events, flush=flush)


def spy(rt: Runtime) -> Flushes:
    flushes = Flushes(rt.journal)
    rt.journal.append = flushes  # type: ignore[method-assign]
    return flushes


@pytest.mark.usefixtures("journal_backend")
def test_a_read_commits_unflushed_and_a_write_flushes_intent_and_outcome(home: Path) -> None:
    with Runtime(home, config=make_config()) as rt:
        rt.submit(proposal("p-first", "demo.ledger.balance", {"account": "acct-1"}))
        flushes = spy(rt)
        assert rt.submit(BALANCE).status is OutcomeStatus.EXECUTED
        assert len(flushes.calls) == 1
        kinds, flush = flushes.calls[0]
        assert kinds[0] == "proposal.received" and kinds[-1] == "run.outcome"
        assert flush is False
        flushes.calls.clear()
        assert rt.submit(CREDIT).status is OutcomeStatus.EXECUTED
        by_kind = {k: f for kinds, f in flushes.calls for k in kinds}
        assert by_kind["action.intent"] is True  # durable before the call
        assert by_kind["run.outcome"] is True  # durable before the answer
        assert by_kind["action.observed"] is False  # flushed by the outcome's commit
        assert rt.journal.verify().intact


def test_read_commit_flushed_waits_for_the_read_s_flush(home: Path) -> None:
    with Runtime(home, config=make_config(read_commit="flushed")) as rt:
        flushes = spy(rt)
        assert rt.submit(BALANCE).status is OutcomeStatus.EXECUTED
        reads = [f for kinds, f in flushes.calls if "run.outcome" in kinds]
        assert reads == [True]


def test_the_read_settings_are_validated() -> None:
    assert RuntimeConfig().read_commit == "deferred"
    assert RuntimeConfig().deferred_flush_ms == 200
    for bad in ({"read_commit": "never"}, {"deferred_flush_ms": 0},
                {"deferred_flush_ms": 60_001}):
        with pytest.raises(ValueError):
            RuntimeConfig.model_validate(bad)


def test_a_bad_read_setting_in_config_json_is_a_typed_error(tmp_path: Path) -> None:
    from cradle_kg.config import load_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"read_commit": "lazy"}))
    with pytest.raises(InputError, match="read_commit"):
        load_config(path)


@pytest.mark.sqlite_only("the SQLite journal's read window")
def test_the_runtime_gives_the_sqlite_journal_its_window(home: Path) -> None:
    with Runtime(home, config=make_config(deferred_flush_ms=750)) as rt:
        assert isinstance(rt.journal, SqliteJournal)
        assert rt.journal.flush_window == 0.75


def ev(i: int, kind: str = "note") -> NewEvent:
    return NewEvent(run_id="run:a", kind=kind, subject=f"s:{i}", actor="agent:a", at=T0,
                    payload={"i": i})


def test_a_block_that_consumes_an_approve_once_is_flushed(tmp_path: Path) -> None:
    from cradle_kg.storage.file_lease import WorkerLease

    with SqliteJournal(tmp_path / "j.sqlite") as journal:
        flushes = Flushes(journal)
        journal.append = flushes  # type: ignore[method-assign]
        ctx = LoopContext(journal, config=RuntimeConfig(), clock=lambda: T0,
                          lease=WorkerLease(tmp_path / "workers"))
        with ctx.one_transaction(flush=False):
            ctx.append([ev(1)])
        with ctx.one_transaction(flush=False):
            ctx.append([ev(2), ev(3, "approval.consumed")])
        assert [f for _k, f in flushes.calls] == [False, True]


@pytest.fixture
def wal_syncs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The files ``os.fdatasync`` / ``os.fsync`` are called on (by a flushed append, the
    journal's timer or close: the WAL is synced with fdatasync, its folder with fsync)."""
    seen: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def recording(fd: int, real: Any = real) -> None:
            seen.append(os.readlink(f"/proc/self/fd/{fd}"))
            real(fd)

        monkeypatch.setattr(os, name, recording)
    yield seen


def test_the_timer_syncs_the_wal_within_the_window(tmp_path: Path,
                                                    wal_syncs: list[str]) -> None:
    with SqliteJournal(tmp_path / "j.sqlite") as journal:
        journal.flush_window = 0.05
        journal.append([ev(1)], flush=False)
        deadline = time.monotonic() + 5
        while journal._durable < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert wal_syncs and wal_syncs[0].endswith("j.sqlite-wal")
        assert journal._durable == journal._committed == 1  # the timer's sync counted


def test_a_flushed_commit_leaves_the_timer_nothing_to_do(tmp_path: Path,
                                                         wal_syncs: list[str]) -> None:
    with SqliteJournal(tmp_path / "j.sqlite") as journal:
        journal.flush_window = 0.05
        journal.append([ev(1)], flush=False)
        journal.append([ev(2)])  # its fsync syncs the whole WAL, the read's frames with it
        assert len([p for p in wal_syncs if p.endswith("-wal")]) == 1
        time.sleep(0.3)
        assert len([p for p in wal_syncs if p.endswith("-wal")]) == 1  # the timer: nothing


def test_close_syncs_what_is_still_unflushed(tmp_path: Path, wal_syncs: list[str]) -> None:
    journal = SqliteJournal(tmp_path / "j.sqlite")
    journal.flush_window = 60
    journal.append([ev(1)], flush=False)
    journal.close()
    assert [p for p in wal_syncs if p.endswith("-wal")]


#: the child prints a read's answer, then waits to be killed
KILLED_READER = """
import json, sys, time
from cradle_kg import Runtime
rt = Runtime(sys.argv[1])
rt.journal.flush_window = 3600  # the timer never fires: only the page cache has it
for p in json.loads(sys.argv[2]):
    out = rt.submit(p)
    print(json.dumps({"id": p["id"], "status": out.status.value}), flush=True)
time.sleep(120)
"""


@pytest.mark.usefixtures("journal_backend")
def test_sigkill_right_after_a_read_s_answer_loses_nothing(home: Path) -> None:
    reads = [proposal(f"p-read-{i}", "demo.ledger.balance", {"account": "acct-1"})
             for i in range(3)]
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_READER, str(home), json.dumps([CREDIT, *reads])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert child.stdout is not None
    answers = []
    for _ in range(4):
        line = child.stdout.readline()
        assert line, child.stderr.read() if child.stderr else ""
        answers.append(json.loads(line))
    child.send_signal(signal.SIGKILL)  # the moment the last read was answered
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert [a["status"] for a in answers] == ["executed"] * 4
    with Runtime(home) as rt:
        assert rt.recovery is not None and rt.recovery.dangling == 0
        assert rt.journal.verify().intact  # the chain and the derived state
        outcomes = {e.payload["outcome"]["proposal_id"]: e.payload["outcome"]["status"]
                    for e in rt.journal.events() if e.kind == "run.outcome"}
        for p in reads:  # every answered read is in the journal, as it was answered
            assert outcomes.get(p["id"]) == "executed", p["id"]
        intents = [e for e in rt.journal.events() if e.kind == "action.intent"]
        assert len(intents) == 4
        again = rt.submit(reads[-1])  # the same submission: answered from the record
        assert again.status is OutcomeStatus.EXECUTED and again.replayed is True
        assert len([e for e in rt.journal.events() if e.kind == "action.intent"]) == 4
        assert rt.journal.dangling_intents() == []


@pytest.mark.slow
def test_a_journal_dropped_without_close_does_not_keep_its_flusher(tmp_path: Path) -> None:
    import gc
    import threading

    journal = SqliteJournal(tmp_path / "j.sqlite")
    journal.flush_window = 0.01
    journal.append([ev(1)], flush=False)
    flusher = journal._flusher
    assert flusher is not None and flusher.is_alive()
    time.sleep(0.1)  # its window passed: the WAL was synced
    del journal
    gc.collect()
    flusher.join(timeout=10)
    assert not flusher.is_alive()
    assert all(t is not flusher for t in threading.enumerate())
