"""A home an auditor is handed by the party being audited: a demo home with a few runs,
whose journal file that party then rewrites with the ``sqlite3`` module (every byte of it
is theirs). Shared by ``test_291`` … ``test_293``."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.canonical import sha256_bytes
from cradle_kg.records import AuditEvent
from cradle_kg.storage import NewEvent
from cradle_kg.storage import sqlite_derived as derived
from cradle_kg.storage.chain import event_hash
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli
from tests.security.homes import credit, opened_demo_home

#: the run the author wants the auditor not to see
HIDDEN = "run:task-p-hidden"
#: the commands that only read through a runtime (``test_301``, ``test_309`` …)
RUNTIME_READERS = (
    ("workflow", "status", HIDDEN),
    ("approvals", "list"),
    ("approvals", "show", "apr:none"),
    ("inbox",),
    ("evidence", "show", "sha256:" + "0" * 64),
    ("budgets", "status"),
    ("autonomy", "status"),
)


def handed_home(factory: pytest.TempPathFactory, name: str) -> Path:
    """A demo home whose embedded journal holds two runs of credits, closed."""
    root = opened_demo_home(factory, name, embedded=True)
    with pytest.MonkeyPatch.context() as env:
        env.delenv(JOURNAL_URL_ENV, raising=False)
        with Runtime(root) as rt:
            for pid in ("p-shown", "p-hidden"):
                assert rt.submit(credit(pid)).status.value == "executed"
    return root


def copied_home(factory: pytest.TempPathFactory, name: str) -> Path:
    """A handed home copied without its graph store or leases, its journal in rollback
    mode as its author leaves it (``test_310``, ``test_375``)."""
    home = handed_home(factory, name)
    author(home / "journal.sqlite").close()
    for made in ("graph", "workers"):
        shutil.rmtree(home / made)
    (home / "graph.lock").unlink(missing_ok=True)
    return home


#: what an author changes in an event as they append it again: (the event before, the
#: event) -> the subject and payload written
Rewrite = Callable[[AuditEvent | None, AuditEvent], tuple[str, dict[str, Any]]]


def rechained(home: Path, into: Path, rewrite: Rewrite,
              drop: Callable[[AuditEvent], bool] | None = None) -> None:
    """``home`` copied to ``into`` by its author: every event appended again through the
    public journal (a chain that holds: hashes recomputed), as ``rewrite`` makes it, but
    those ``drop`` says to leave out."""
    from cradle_kg.storage import SqliteJournal
    from cradle_kg.storage.opening import open_home_journal

    shutil.copytree(home, into, ignore=shutil.ignore_patterns("journal.sqlite*", "graph*",
                                                               "workers"))
    with open_home_journal(home, must_exist=True) as journal:
        events = list(journal.events())
        keys = journal.claimed_keys()
        key = journal.stored_digest_key()
    with SqliteJournal(into / "journal.sqlite") as journal:
        if key is not None:
            journal.adopt_digest_key(key)
        for before, ev in zip([None, *events], events, strict=False):
            if drop is not None and drop(ev):
                continue
            subject, payload = rewrite(before, ev)
            journal.append([NewEvent(run_id=ev.run_id, kind=ev.kind, subject=subject,
                                     actor=ev.actor, at=ev.at, payload=payload,
                                     idem_key=keys.get(ev.seq))])


def author(journal: Path) -> sqlite3.Connection:
    """The author's own connection to the file, out of WAL so that every byte they write
    is in the one file handed over."""
    conn = sqlite3.connect(journal, isolation_level=None)
    conn.execute("PRAGMA journal_mode=DELETE")
    return conn


def keyed_intent(i: int, key: str) -> NewEvent:
    """An intent claiming ``key`` (the same key for every ``i``: a second claim must fail)."""
    return NewEvent(run_id=f"run:{key}", kind="action.intent", subject=f"act:{i}",
                    actor="agent:a", at=datetime(2026, 1, 1, tzinfo=UTC), payload={"i": i},
                    idem_key=f"idem:{key}")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def append_forged(journal: Path, *, kind: str, payload: str, run_id: str = "run:forged",
                  subject: str = "forged", actor: str = "agent:author") -> int:
    """Chain one more event of the author's making (its ``payload`` text as given), move
    the head, and derive the derived tables again with the public code: what ``audit
    verify`` checks holds. Returns its seq."""
    conn = author(journal)
    try:
        conn.execute("BEGIN")
        seq, prev = conn.execute("SELECT seq, hash FROM head").fetchone()
        seq += 1
        event_id, at = f"evt-{seq:010d}", "2026-12-06T12:00:00.000000+00:00"
        payload_hash = sha256_bytes(payload.encode("utf-8"))
        own = event_hash(seq=seq, event_id=event_id, run_id=run_id, kind=kind,
                         subject=subject, actor=actor, at=at, payload_hash=payload_hash,
                         prev_hash=prev, idem_key=None)
        conn.execute("INSERT INTO events (seq, id, run_id, kind, subject, actor, at, payload, "
                     "payload_hash, prev_hash, hash, idem_key) VALUES "
                     "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                     (seq, event_id, run_id, kind, subject, actor, at, payload, payload_hash,
                      prev, own))
        conn.execute("UPDATE head SET seq = ?, hash = ?", (seq, own))
        derived.rebuild(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return int(seq)


def home_files(home: Path) -> dict[str, str]:
    """Every file and folder under ``home`` and each file's digest (a folder: ``"/"``), but
    a journal's ``-shm``: the index SQLite's readers share in memory, not the journal."""
    return {str(p.relative_to(home)): "/" if p.is_dir() else digest(p)
            for p in sorted(home.rglob("*")) if not p.name.endswith("-shm")}


def refused_as_it_was(home: Path, command: tuple[str, ...], *, format_said: str) -> None:
    """``cradle-kg COMMAND --home HOME`` refuses the home's journal of an older format in
    one line (exit 2, ``format_said`` named, no traceback) and leaves its bytes as they
    were (``test_293``, ``test_301``)."""
    journal = home / "journal.sqlite"
    before = digest(journal)
    res = run_cli(*command, "--home", str(home))
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert format_said in res.stdout + res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    assert digest(journal) == before
