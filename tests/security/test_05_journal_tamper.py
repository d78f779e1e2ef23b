"""Issue 10, item 5: the journal's evidence covers everything, and verify only reads.

The tamper corpus is generated from the journal's real tables and columns (read from
the file, not listed here), so a column added later is edited by this test too: every
edit of any column of any row, deleted / reordered / duplicated rows, truncation,
emptied or dropped tables, a dropped index, a 0-byte file, a WAL without its database
and a missing file must be reported broken — and verify must leave every byte, every
mtime and the directory listing exactly as it found them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cradle_kg.errors import InputError
from cradle_kg.storage import (
    Anchor,
    ChainReport,
    NewEvent,
    event_hash,
    verify_journal,
)
from cradle_kg.storage import (
    SqliteJournal as Journal,
)
from cradle_kg.storage import (
    sqlite_derived as derived,
)
from tests.inprocess import run_cli

pytestmark = pytest.mark.sqlite_only(
    "the SQLite file's tamper corpus; PostgreSQL's is test_05_journal_tamper_postgresql")

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]

#: (kind, subject, payload, idem_key): intents claim keys, as the runtime's do, and the
#: events mean what the runtime's do (an intent allowed by a decision, claiming its action's
#: key: ``audit verify`` checks :mod:`cradle_kg.storage.invariants` too)
_ALLOW = {"decision": {"verdict": "allow", "granted_to": "agent:a"}}


def intent_payload(key: str, **payload: object) -> dict[str, object]:
    return {**payload, "decision_id": "dec:1",
            "action": {"idempotency_key": key, "executed_by": "agent:a"}}


EVENTS: list[tuple[str, str, dict[str, object], str | None]] = [
    ("decision.made", "dec:1", _ALLOW, None),
    ("proposal.received", "proposal:p-1", {"amount": 250}, None),
    ("action.intent", "action:a-1", intent_payload("key-1", input_hash="sha256:aa", cost=1),
     "key-1"),
    ("action.observed", "action:a-1", {"ok": True}, None),
    ("approval.consumed", "approval:x", {"approval_id": "ap-1"}, "approval-once:ap-1"),
    ("action.intent", "action:a-2", intent_payload("key-2", input_hash="sha256:bb", cost=2),
     "key-2"),
    ("action.outcome", "action:a-2", {"status": "executed", "text": "é"}, None),
    ("run.closed", "run:r", {}, None),
    # rows for every derived table: an approval's place, an intent closed by its outcome
    ("approval.requested", "approval:x", {"approval": {"id": "ap-1"}}, None),
    ("run.outcome", "action:a-1", {"outcome": {"status": "escalated"}}, None),
    # and a run's state: a workflow started (on its way to its human step: its run has
    # none requested), a human step and a task waiting
    ("workflow.started", "workflow:w", {"workflow": "w", "agent": "agent:a",
                                        "steps": [["s", "human"]]}, None),
    ("human.requested", "step:s", {"step": "s", "reasons": ["why"]}, None),
    ("human_task.opened", "task:t-1", {"task_id": "t-1"}, None),
]


def build(path: Path) -> ChainReport:
    with Journal(path) as journal:
        for i, (kind, subject, payload, key) in enumerate(EVENTS):
            journal.append([NewEvent(run_id=f"run:{i % 2}", kind=kind, subject=subject,
                                     actor="agent:a", at=T0, payload=payload, idem_key=key)])
    report = verify_journal(path)
    assert report.intact, report
    return report


# --- the corpus ---------------------------------------------------------------------

Tamper = Callable[[sqlite3.Connection], object]


@dataclass(frozen=True)
class Case:
    name: str
    tamper: Tamper
    #: verify with the pristine head as anchor (truncation re-chained needs one)
    anchored: bool = False


def _schema(path: Path) -> dict[str, list[tuple[str, bool]]]:
    """Every table's columns as (name, nullable), read from the file itself."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: [(c[1], not c[3] and not c[5]) for c in conn.execute(
            f"PRAGMA table_info({t})")] for t in tables}
    finally:
        conn.close()


def _edit(table: str, col: str, rowid: int, expr: str) -> Tamper:
    return lambda c: c.execute(f"UPDATE {table} SET {col} = {expr} WHERE rowid = ?", (rowid,))


def _column_edits(table: str, col: str, nullable: bool, rowid: int) -> Iterator[Case]:
    at = f"{table}.{col}@{rowid}"
    # a different value of the same type: numbers move, texts change their last character
    yield Case(f"edit:{at}", _edit(table, col, rowid,
               f"CASE typeof({col}) WHEN 'integer' THEN {col} + 100 "
               f"WHEN 'null' THEN 'forged' "
               f"ELSE substr({col}, 1, length({col}) - 1) || "
               f"CASE WHEN substr({col}, -1) = 'X' THEN 'Y' ELSE 'X' END END"))
    # the same bytes as a BLOB: equal to the eye, unequal to every runtime query
    yield Case(f"blob:{at}", _edit(table, col, rowid,
               f"CASE typeof({col}) WHEN 'text' THEN CAST({col} AS BLOB) ELSE x'00' END"))
    if nullable:
        yield Case(f"null:{at}", _edit(table, col, rowid,
                   f"CASE WHEN {col} IS NULL THEN 'forged' ELSE NULL END"))


def _swap(a: int, b: int) -> Tamper:
    def run(c: sqlite3.Connection) -> None:
        c.execute("UPDATE events SET seq = -1 WHERE seq = ?", (a,))
        c.execute("UPDATE events SET seq = ? WHERE seq = ?", (a, b))
        c.execute("UPDATE events SET seq = ? WHERE seq = -1", (b,))
    return run


def _duplicate(seq: int) -> Tamper:
    def run(c: sqlite3.Connection) -> None:
        cols = [r[1] for r in c.execute("PRAGMA table_info(events)") if r[1] not in ("seq", "id")]
        top = c.execute("SELECT MAX(seq) FROM events").fetchone()[0] + 1
        c.execute(f"INSERT INTO events(seq, id, {', '.join(cols)}) SELECT ?, ?, "
                  f"{', '.join('NULL' if x == 'idem_key' else x for x in cols)} "
                  "FROM events WHERE seq = ?", (top, f"evt-{top:010d}", seq))
        c.execute("UPDATE head SET seq = ?, hash = (SELECT hash FROM events WHERE seq = ?)",
                  (top, top))
    return run


def _truncate(keep: int, *, fix_head: bool) -> Tamper:
    def run(c: sqlite3.Connection) -> None:
        c.execute("DELETE FROM events WHERE seq > ?", (keep,))
        if fix_head:
            c.execute("UPDATE head SET seq = ?, hash = (SELECT hash FROM events WHERE seq = ?)",
                      (keep, keep))
    return run


def _rechain(c: sqlite3.Connection) -> None:
    """The forger's move: drop the last events and rewrite every hash with the public
    function — and re-derive the derived tables from the forged events with the public
    code. Only an anchor kept elsewhere can see it."""
    c.execute("DELETE FROM events WHERE seq > 5")
    c.execute("UPDATE events SET actor = 'mallory' WHERE seq = 2")
    prev = "sha256:" + "0" * 64
    rows = c.execute("SELECT seq, id, run_id, kind, subject, actor, at, payload_hash, idem_key "
                     "FROM events ORDER BY seq").fetchall()
    for seq, eid, run, kind, subject, actor, at, ph, key in rows:
        own = event_hash(seq=seq, event_id=eid, run_id=run, kind=kind, subject=subject,
                         actor=actor, at=at, payload_hash=ph, prev_hash=prev, idem_key=key)
        c.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, own, seq))
        prev = own
    c.execute("UPDATE head SET seq = 5, hash = ?", (prev,))
    derived.rebuild(c)


def _sql(*statements: str) -> Tamper:
    return lambda c: [c.execute(s) for s in statements]


def _sqlite_accepts(pristine: Path, case: Case) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "j.sqlite"
        shutil.copyfile(pristine, path)
        conn = sqlite3.connect(path)
        try:
            case.tamper(conn)
            return True
        except sqlite3.IntegrityError:
            return False
        except sqlite3.OperationalError as exc:  # an outcome's payload made not JSON: the
            if "malformed JSON" in str(exc):  # index on its proposal id refuses the row
                return False
            raise
        finally:
            conn.close()


def corpus() -> list[Case]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.sqlite"
        build(path)
        schema = _schema(path)
        conn = sqlite3.connect(path)
        rowids = {t: [r[0] for r in conn.execute(f"SELECT rowid FROM {t}")] for t in schema}
        indexes = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")]
        conn.close()
        edits = [c for t, cols in schema.items() for rowid in rowids[t]
                 for col, nullable in cols for c in _column_edits(t, col, nullable, rowid)]
        cases = [c for c in edits if _sqlite_accepts(path, c)]
    assert set(schema) >= {"events", "head"} and indexes
    refused = {c.name.split(":")[1].split("@")[0] for c in edits if c not in cases}
    # only the integer primary key, the head's CHECK and (format 8) the index on an
    # outcome's proposal id, which reads its payload as JSON, make SQLite refuse an edit
    assert refused <= {"events.seq", "head.one", "events.payload"}, refused
    n = len(EVENTS)
    cases += [Case(f"delete:events@{s}", _sql(f"DELETE FROM events WHERE seq = {s}"))
              for s in range(1, n + 1)]
    cases += [Case(f"swap:{s}-{s + 1}", _swap(s, s + 1)) for s in range(1, n)]
    cases += [Case(f"duplicate:{s}", _duplicate(s)) for s in (1, n // 2, n)]
    cases += [Case(f"drop-index:{i}", _sql(f"DROP INDEX {i}")) for i in indexes]
    cases += [Case(f"drop-table:{t}", _sql(f"DROP TABLE {t}")) for t in schema]
    cases += [
        Case("truncate:tail", _truncate(n - 2, fix_head=False)),
        Case("truncate:tail-head-fixed", _truncate(n - 2, fix_head=True), anchored=True),
        Case("truncate:rechained", _rechain, anchored=True),
        Case("empty:events", _sql("DELETE FROM events")),
        Case("empty:head", _sql("DELETE FROM head")),
        Case("empty:both", _sql("DELETE FROM events", "DELETE FROM head")),
        Case("drop:both", _sql("DROP TABLE events", "DROP TABLE head")),
        Case("format:old", _sql("PRAGMA user_version = 1")),
        Case("schema:trigger", _sql("CREATE TRIGGER t AFTER INSERT ON events BEGIN "
                                    "DELETE FROM head; END")),
        Case("schema:table", _sql("CREATE TABLE keys(k TEXT)")),
    ]
    return cases


CORPUS = corpus()
#: the same corpus read through a live WAL: every structural case, every column of one row
#: (an intent: run_id, idem_key, ...) and of the head; detection itself does not depend on it
LIVE = [c for c in CORPUS if "@" not in c.name or c.name.endswith(("@3", "head.seq@1",
                                                                     "head.hash@1"))]


# --- verify never writes ------------------------------------------------------------

def snapshot(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every file next to the journal: its content hash, mtime and mode."""
    out = {}
    for entry in sorted(folder.iterdir()):
        st = entry.stat()
        data = "\n".join(sorted(os.listdir(entry))).encode() if entry.is_dir() \
            else entry.read_bytes()
        out[entry.name] = (hashlib.sha256(data).hexdigest(), st.st_mtime_ns, st.st_mode)
    return out


@contextmanager
def unchanged(folder: Path) -> Iterator[None]:
    before = snapshot(folder)
    yield
    assert snapshot(folder) == before, "verify wrote to the journal or next to it"


HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
print("ready", flush=True)
sys.stdin.read()
"""


def _apply(path: Path, tamper: Tamper, *, keep_open: bool) -> subprocess.Popen[str] | None:
    """Tamper with the raw file. ``keep_open``: the edit stays in the ``-wal``, and another
    process holds the journal open (so a live ``-shm``), as while a runtime runs."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("BEGIN")
    tamper(conn)
    conn.execute("COMMIT")
    holder = None
    if keep_open:
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
    conn.close()
    return holder


def _release(holder: subprocess.Popen[str] | None) -> None:
    if holder is not None:
        holder.communicate("", timeout=30)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Anchor]:
    path = tmp_path_factory.mktemp("pristine") / "journal.sqlite"
    report = build(path)
    return path, Anchor(hash=report.head_hash, seq=report.events)


CASES = [pytest.param(c, False, id=f"{c.name}-checkpointed") for c in CORPUS] + [
    pytest.param(c, True, id=f"{c.name}-live-wal") for c in LIVE]


@pytest.mark.parametrize(("case", "live"), CASES)
def test_every_tampering_is_detected_and_verify_only_reads(
        case: Case, live: bool, pristine: tuple[Path, Anchor], tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(pristine[0], path)
    holder = _apply(path, case.tamper, keep_open=live)
    try:
        with unchanged(tmp_path):
            report = verify_journal(path, anchor=pristine[1] if case.anchored else None)
        assert not report.intact, f"{case.name}: not detected"
        assert report.reason
    finally:
        _release(holder)


def test_an_untampered_copy_is_intact_in_both_states(pristine: tuple[Path, Anchor],
                                                     tmp_path: Path) -> None:
    """The corpus cannot pass by reporting everything broken."""
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(pristine[0], path)
    holder = _apply(path, lambda c: None, keep_open=True)
    try:
        with unchanged(tmp_path):
            assert verify_journal(path, anchor=pristine[1]).intact
    finally:
        assert holder is not None
        _release(holder)
    with unchanged(tmp_path):
        assert verify_journal(path, anchor=pristine[1]).intact


def test_clearing_an_intents_key_breaks_that_event(pristine: tuple[Path, Anchor],
                                                   tmp_path: Path) -> None:
    """The finding: NULL on `idem_key` let a resubmission claim the key and run again."""
    path = tmp_path / "journal.sqlite"
    shutil.copyfile(pristine[0], path)
    _apply(path, _sql("UPDATE events SET idem_key = NULL WHERE idem_key = 'key-1'"),
           keep_open=False)
    report = verify_journal(path)
    assert (report.intact, report.broken_seq, report.broken_id) == (False, 3, "evt-0000000003")


# --- files that are not journals ----------------------------------------------------

def _files(pristine: Path, folder: Path) -> dict[str, Callable[[Path], None]]:
    def wal_only(path: Path) -> None:
        with Journal(path) as journal:  # a live journal: copy its -wal, not its database
            journal.append([NewEvent(run_id="r", kind="k", subject="s", actor="a", at=T0,
                                     payload={})])
            shutil.copyfile(f"{path}-wal", folder / "saved-wal")
        path.unlink()
        shutil.move(folder / "saved-wal", f"{path}-wal")

    return {
        "missing": lambda p: None,
        "zero-bytes": lambda p: p.write_bytes(b""),
        "not-sqlite": lambda p: p.write_text('{"events": []}'),
        "torn": lambda p: p.write_bytes(pristine.read_bytes()[:4096 + 100]),
        "fresh-schema-no-events": lambda p: Journal(p).close(),
        "wal-without-database": wal_only,
        "a-directory": lambda p: p.mkdir(),
    }


@pytest.mark.parametrize("kind", sorted(_files(Path(), Path())))
def test_not_a_journal_is_broken_and_stays_untouched(kind: str, pristine: tuple[Path, Anchor],
                                                     tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    _files(pristine[0], tmp_path)[kind](path)
    with unchanged(tmp_path):
        report = verify_journal(path)
    assert not report.intact and report.reason, kind


# --- read-only copies, WAL states ---------------------------------------------------

@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    for entry in folder.iterdir():
        entry.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield
    finally:
        folder.chmod(0o755)
        for entry in folder.iterdir():
            entry.chmod(0o644)


@pytest.mark.parametrize("state", ["checkpointed", "wal-and-shm", "wal-without-shm"])
def test_verify_works_on_a_read_only_copy(state: str, tmp_path: Path) -> None:
    src, copy = tmp_path / "src", tmp_path / "copy"
    src.mkdir()
    copy.mkdir()
    with Journal(src / "journal.sqlite") as journal:
        for i in range(30):
            journal.append([NewEvent(run_id="r", kind="k", subject=f"s{i}", actor="a", at=T0,
                                     payload={"i": i}, idem_key=f"k{i}")])
        if state != "checkpointed":  # a crash image: the events are only in the -wal
            for name in os.listdir(src):
                if state == "wal-and-shm" or not name.endswith("-shm"):
                    shutil.copyfile(src / name, copy / name)
    if state == "checkpointed":
        shutil.copyfile(src / "journal.sqlite", copy / "journal.sqlite")
    with read_only(copy), unchanged(copy):
        report = verify_journal(copy / "journal.sqlite")
    assert report.intact and report.events == 30, report


# --- a concurrent writer ------------------------------------------------------------

WRITER = """
import sys
from datetime import UTC, datetime
from pathlib import Path
from cradle_kg.errors import InputError
from cradle_kg.storage import NewEvent
from cradle_kg.storage import SqliteJournal as Journal
path, stop = Path(sys.argv[1]), Path(sys.argv[2])
with Journal(path) as j:
    n = 0
    while not stop.exists() and n < 200_000:
        n += 1
        j.append([NewEvent(run_id="r", kind="k", subject=f"s{n}", actor="a",
                           at=datetime.now(UTC), payload={"n": n, "pad": "x" * 200},
                           idem_key=f"w{n}-{i}" if n % 2 else None) for i in range(3)])
"""


def test_verify_during_a_concurrent_writer_never_reports_a_false_break(tmp_path: Path) -> None:
    path, stop = tmp_path / "journal.sqlite", tmp_path / "stop"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(stop)], cwd=ROOT)
    try:
        while not path.exists() or verify_journal(path).events < 300:
            assert writer.poll() is None, "the writer died"
            time.sleep(0.05)
        seen = []
        for _ in range(12):
            report = verify_journal(path)
            assert report.intact, report
            seen.append(report.events)
        assert writer.poll() is None and seen[-1] > seen[0], "the writer was not writing"
    finally:
        stop.touch()
        writer.wait(timeout=60)
    final = verify_journal(path)
    assert final.intact and final.events >= seen[-1]


# --- the command line ---------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (tests/inprocess): same main, exit code and output."""
    return run_cli(*args, env={"COLUMNS": "80"})


@pytest.mark.parametrize("kind", ["missing", "zero-bytes", "empty-tables", "dropped-tables",
                                  "null-idem-key"])
def test_audit_verify_names_a_broken_journal_and_writes_nothing(
        kind: str, pristine: tuple[Path, Anchor], tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / "journal.sqlite"
    if kind != "missing":
        shutil.copyfile(pristine[0], path)
    tampers = {"zero-bytes": None, "empty-tables": _sql("DELETE FROM events", "DELETE FROM head"),
               "dropped-tables": _sql("DROP TABLE events", "DROP TABLE head"),
               "null-idem-key": _sql("UPDATE events SET idem_key = NULL WHERE seq = 3")}
    if kind == "zero-bytes":
        path.write_bytes(b"")
    elif kind in tampers:
        _apply(path, tampers[kind], keep_open=False)  # type: ignore[arg-type]
    with unchanged(home):
        done = cli("audit", "verify", "--home", str(home))
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout.startswith("BROKEN") and "Traceback" not in done.stderr
    assert len(done.stdout.strip().splitlines()) == 1, "one line, not wrapped at 80 columns"
    assert not done.stderr, "no progress bar when piped"


def test_audit_anchor_then_verify_against_it(pristine: tuple[Path, Anchor],
                                             tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(pristine[0], home / "journal.sqlite")
    done = cli("audit", "anchor", "--home", str(home), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1
    anchor = json.loads(done.stdout)
    assert (anchor["seq"], anchor["hash"]) == (pristine[1].seq, pristine[1].hash)
    assert anchor["anchor"] == str(pristine[1])
    assert cli("audit", "verify", "--home", str(home), "--anchor",
               anchor["anchor"]).returncode == 0
    assert verify_journal(home / "journal.sqlite", anchor=Anchor.parse(anchor["hash"])).intact
    _apply(home / "journal.sqlite", _rechain, keep_open=False)
    assert cli("audit", "verify", "--home", str(home)).returncode == 0, \
        "re-chaining is invisible without an anchor (the README says so)"
    done = cli("audit", "verify", "--home", str(home), "--anchor", anchor["anchor"])
    assert done.returncode == 1 and "anchor" in done.stdout, done.stdout
    for form in (anchor["hash"], f"3:{anchor['hash']}", f"99:{anchor['hash']}"):
        report = verify_journal(home / "journal.sqlite", anchor=Anchor.parse(form))
        assert not report.intact and "anchor" in str(report.reason), form
    done = cli("audit", "verify", "--home", str(home), "--anchor", "sha256:12")
    assert done.returncode == 2 and done.stderr.startswith("error:")
    for bad in ("nope", "sha256:12", "0:" + anchor["hash"], "x:" + anchor["hash"], "",
                anchor["hash"].upper(), "1:2:" + anchor["hash"]):
        with pytest.raises(InputError):
            Anchor.parse(bad)
    _apply(home / "journal.sqlite", _sql("DELETE FROM head"), keep_open=False)
    done = cli("audit", "anchor", "--home", str(home))
    assert done.returncode == 1 and "head" in done.stdout and "anchor:" not in done.stdout


def test_a_journal_of_another_format_is_never_extended(pristine: tuple[Path, Anchor],
                                                       tmp_path: Path) -> None:
    """An old journal (hash without `idem_key`) must not grow a chain of mixed hashes."""
    from cradle_kg.errors import JournalError

    path = tmp_path / "journal.sqlite"
    shutil.copyfile(pristine[0], path)
    _apply(path, _sql("PRAGMA user_version = 0"), keep_open=False)
    before = path.read_bytes()
    with pytest.raises(JournalError, match="format `1`"):
        Journal(path)
    assert path.read_bytes() == before
