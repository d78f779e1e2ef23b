"""A query worker is lean (issue 17, target 3: memory): its fork server imports the query
path and nothing of the journal's writers, the event records or pydantic; what it reads of
an embedded journal (:class:`JournalWatch`) agrees with the journal itself; and it gives
the heap its query threads freed back to the system (:class:`HeapTrim`)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from cradle_kg.server.front import HeapTrim, _malloc_trim
from cradle_kg.server.supervisor import _PRELOAD
from cradle_kg.storage import NewEvent, SqliteJournal
from cradle_kg.storage.sqlite_watch import JournalWatch


def test_the_workers_fork_server_imports_no_records_or_pydantic() -> None:
    probe = ("import importlib, sys\n"
             f"for name in {list(_PRELOAD)!r}:\n    importlib.import_module(name)\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('pydantic', 'pydantic_core', 'rdflib', 'fastapi', 'starlette', 'httpx') "
             "or m in ('cradle_kg.records', 'cradle_kg.canonical', 'cradle_kg.storage.journal',"
             " 'cradle_kg.storage.sqlite', 'cradle_kg.graph.project')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_the_journal_watch_reads_what_the_journal_holds(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    journal = SqliteJournal(path)
    watch = JournalWatch(path)
    try:
        assert watch.head_seq() == journal.head()[0] == 0
        mark = watch.watermark()
        assert watch.watermark() == mark  # nobody committed
        journal.append([NewEvent(run_id="run:a", kind="note", subject="s:1", actor="agent:a",
                                 at=datetime(2026, 1, 1, tzinfo=UTC), payload={"i": 1})])
        assert watch.watermark() != mark  # another connection committed
        assert watch.head_seq() == journal.head()[0] == 1
    finally:
        watch.close()
        journal.close()


def test_a_worker_trims_its_heap_when_it_falls_idle_after_queries() -> None:
    """Never under load (a trim there cost 1.5-3.4 ms of CPU per query); within two ticks
    of the load stopping; not again until more queries were answered."""
    calls: list[int] = []
    heap = HeapTrim(lambda pad: calls.append(pad) or 1)
    assert not any(heap.tick(0, False) for _ in range(40))  # nothing answered: no trim
    assert not any(heap.tick(n, False) for n in range(1, 200))  # answering every tick
    assert not heap.tick(199, True)  # a query still running: not idle
    assert heap.tick(199, False)  # a whole tick without an answer: trimmed
    assert not any(heap.tick(199, False) for _ in range(40))  # nothing answered since
    assert not heap.tick(205, False)  # answered during this tick
    assert heap.tick(205, False)
    assert calls == [0, 0]
    assert not HeapTrim(None).tick(1, False) and not HeapTrim(None).tick(1, False)


def test_the_trim_is_glibcs_here() -> None:
    trim = _malloc_trim()
    assert trim is not None and trim(0) in (0, 1)
