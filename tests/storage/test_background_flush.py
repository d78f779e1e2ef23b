"""The projector's store flushes in the background (``OxigraphStore.flush_in_background``,
set by ``graph follow``): RocksDB's memtable flush runs in a thread of its own while the
next batches are written. Nothing about the store may change with it: the same quads,
the exact watermark, a restart (clean, or after SIGKILL at any instant, flushes in
flight included) resuming from the store's own watermark — no gap, no duplicate — and a
flush that fails is said before anything more is written. ``FLUSH_EVERY`` is made tiny
here so that nearly every batch starts a flush."""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import GraphStoreError
from cradle_kg.graph.catchup import catch_up, rebuild
from cradle_kg.graph.follow import FollowStatus, follow
from cradle_kg.storage import open_home_journal
from cradle_kg.storage import oxigraph as oxigraph_module
from cradle_kg.storage.graph import FlushesInBackground
from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from cradle_kg.storage.oxigraph import OxigraphStore
from tests import demo_template
from tests.racers import ForkedPython

#: a flush every ~1-2 events of the demo's journal
TINY = 30


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("bgflush") / "home"
    demo_template.demo_home(home, tmp_path_factory)
    shutil.rmtree(home / "graph")
    return home


@pytest.fixture
def home(base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(GRAPH_URL_ENV, raising=False)  # the embedded store's behaviour
    copy = tmp_path / "home"
    shutil.copytree(base, copy)
    return copy


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """FLUSH_EVERY made tiny; the background flushes started, counted."""
    monkeypatch.setattr(oxigraph_module, "FLUSH_EVERY", TINY)
    started: list[int] = []
    behind = OxigraphStore._flush_behind

    def counting(self: OxigraphStore) -> None:
        started.append(self._unflushed)
        behind(self)

    monkeypatch.setattr(OxigraphStore, "_flush_behind", counting)
    return started


def fresh_projection(home: Path) -> tuple[int, str]:
    reference = OxigraphStore.in_memory()
    with open_home_journal(home, must_exist=True) as journal:
        rebuild(reference, journal)
        return journal.head()[0], reference.nquads()


def append_one(home: Path, pid: str) -> int:
    with Runtime(home, graph_sync=False) as rt:
        rt.submit({"id": pid, "task_id": f"task-{pid}", "agent_id": AGENT,
                   "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-2",
                              "arguments": {"account": "acct-2", "amount": 3}}})
        return rt.journal.head()[0]


def test_the_embedded_store_flushes_in_background_only_when_asked(tmp_path: Path) -> None:
    store = OxigraphStore(tmp_path / "graph")
    try:
        assert isinstance(store, FlushesInBackground)
        assert store._background is False  # the runtime, the CLI, the server: as before
        store.flush_in_background()
        assert store._background is True
    finally:
        store.close()


def test_background_flushes_leave_the_same_store_as_waiting_ones(
        home: Path, tmp_path: Path, counted: list[int]) -> None:
    waiting, behind = OxigraphStore(tmp_path / "a"), OxigraphStore(tmp_path / "b")
    behind.flush_in_background()
    try:
        with open_home_journal(home, must_exist=True) as journal:
            head = journal.head()[0]
            assert catch_up(waiting, journal, batch=1) == head
            assert counted == []  # the waiting store flushed in the caller's thread
            assert catch_up(behind, journal, batch=1) == head
        assert len(counted) >= 3, counted  # flushes were started behind the writes
        assert behind.projected_seq() == waiting.projected_seq() == head
        assert behind.nquads() == waiting.nquads()
    finally:
        waiting.close()
        behind.close()
    reopened = OxigraphStore(tmp_path / "b")
    try:  # what the background flushes wrote (and the rest, from the log) is on disk
        assert reopened.projected_seq() == head
        assert reopened.nquads() == fresh_projection(home)[1]
    finally:
        reopened.close()


def test_follow_flushes_in_background_and_a_restart_resumes_exactly(
        home: Path, counted: list[int]) -> None:
    seen: list[FollowStatus] = []
    with open_home_journal(home, must_exist=True) as journal:
        head = journal.head()[0]
        store = OxigraphStore(home / "graph")
        try:
            done = follow(store, journal, stop=threading.Event(), report=seen.append,
                          batch=2, once=True)
            assert store._background is True
        finally:
            store.close()
    assert done == head and len(counted) >= 3
    new_head = append_one(home, "p-bg-1")
    assert new_head > head
    seen.clear()
    with open_home_journal(home, must_exist=True) as journal:
        store = OxigraphStore(home / "graph")
        try:
            assert store.projected_seq() == head  # exact, after a clean stop
            done = follow(store, journal, stop=threading.Event(), report=seen.append,
                          batch=2, once=True)
            assert done == new_head - head  # from the watermark: nothing twice, no gap
            assert store.projected_seq() == new_head
        finally:
            store.close()
    assert seen[-1].projected == seen[-1].head == new_head
    final_head, reference = fresh_projection(home)
    assert final_head == new_head
    store = OxigraphStore(home / "graph")
    try:
        assert store.nquads() == reference
    finally:
        store.close()


class _FailingFlush:
    """A pyoxigraph store whose flush fails (a full disk, say); the rest goes through."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.failed = threading.Event()

    def flush(self) -> None:
        self.failed.set()
        raise OSError("No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_failed_background_flush_is_said_before_anything_more_is_written(
        home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oxigraph_module, "FLUSH_EVERY", TINY)
    store = OxigraphStore(tmp_path / "graph")
    store.flush_in_background()
    real = store.store
    failing = _FailingFlush(real)
    store.store = failing
    with open_home_journal(home, must_exist=True) as journal:
        head = journal.head()[0]
        with pytest.raises(GraphStoreError, match="cannot flush the graph store"):
            # the first batch starts the failing flush; a later one says it, unwritten
            catch_up(store, journal, batch=1)
        assert failing.failed.is_set()
        stopped = store.projected_seq()
        assert 0 < stopped < head
        assert store.projected_seq() == stopped
        store.store = real  # the disk has room again: the next catch-up goes on from there
        assert catch_up(store, journal, batch=5) == head - stopped
    assert store.projected_seq() == head
    assert store.nquads() == fresh_projection(home)[1]
    store.close()


def test_a_failed_background_flush_in_flight_at_close_is_said_and_the_lock_released(
        tmp_path: Path) -> None:
    store = OxigraphStore(tmp_path / "graph")
    store.flush_in_background()
    real = store.store
    store.store = _FailingFlush(real)
    store._flush_behind()  # as apply would start it
    store.store = real
    del real  # the test's own reference: the store is closed once close() drops its own
    with pytest.raises(GraphStoreError, match="cannot flush the graph store"):
        store.close()
    assert not hasattr(store, "store") and store._lock is None
    gc.collect()
    again = OxigraphStore(tmp_path / "graph")  # the store's and the lock's files are free
    again.close()


#: ``graph follow`` with a flush started after (nearly) every batch
_FOLLOW = ("import sys; import cradle_kg.storage.oxigraph as o; o.FLUSH_EVERY = "
           f"{TINY}; sys.argv[0] = 'cradle-kg'; from cradle_kg.cli import entry; entry()")


def follow_process(home: Path, *args: str) -> ForkedPython:
    """``graph follow`` in a process of its own, forked from the fork server (no
    interpreter start), its stdout a pipe read as it runs."""
    env = {k: v for k, v in os.environ.items() if k not in ("CRADLE_CRASH_AT", GRAPH_URL_ENV)}
    return ForkedPython(_FOLLOW, ["graph", "follow", "--home", str(home), "--format", "json",
                                  *args], env=env, cwd=os.getcwd(), stream=True)


def watermark(home: Path) -> int:
    store = OxigraphStore(home / "graph")
    try:
        return store.projected_seq()
    finally:
        store.close()


@pytest.mark.parametrize("after_lines", [1, 3])
def test_killed_while_flushing_in_background_then_restarted_no_gap_no_duplicate(
        home: Path, after_lines: int) -> None:
    with open_home_journal(home, must_exist=True) as journal:
        head = journal.head()[0]
    runner = follow_process(home, "--batch", "1", "--interval", "0.05")
    assert runner.stdout is not None
    for _ in range(after_lines):  # mid-stream: a batch a line, a flush after nearly each
        line = runner.stdout.readline()
        assert json.loads(line)["error"] is None, line
    time.sleep(0.005)
    runner.send_signal(signal.SIGKILL)
    runner.communicate(timeout=60)
    at_kill = watermark(home)
    assert 0 < at_kill <= head
    again = follow_process(home, "--once", "--batch", "3")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    done = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    assert done[-1]["projected"] == done[-1]["head"] == head
    assert done[-1]["added"] == head - at_kill  # resumed from the watermark, exactly
    assert watermark(home) == head
    store = OxigraphStore(home / "graph")
    try:
        assert store.nquads() == fresh_projection(home)[1]
    finally:
        store.close()
