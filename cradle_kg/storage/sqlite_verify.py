"""Verifying a journal: read only, one read transaction, every column accounted for.

What each column of the journal is checked by (a new column must be added here, or the
tamper corpus in ``tests/security/test_05_journal_tamper.py`` fails):

===============  =====================================================================
events.seq       covered by ``hash``; must run 1, 2, 3, ... without a gap
events.id        covered by ``hash``; re-derived from ``seq`` (``evt-<seq:010d>``)
events.run_id    covered by ``hash``
events.kind      covered by ``hash``
events.subject   covered by ``hash``
events.actor     covered by ``hash``
events.at        covered by ``hash``
events.payload   re-derived: its SHA-256 must equal ``payload_hash``
events.payload_hash  covered by ``hash``
events.prev_hash covered by ``hash``; must equal the previous event's ``hash`` (genesis:
                 ``GENESIS_HASH``)
events.hash      re-derived from all of the above and ``idem_key``
events.idem_key  covered by ``hash`` (NULL included: clearing a key breaks the event)
head.one         a CHECK constraint holds it at 1 (the schema is compared, below)
head.seq         must equal the last event's ``seq``
head.hash        must equal the last event's ``hash``
usage.*          re-derived from the events and compared row by row (:mod:`.derived`;
open_intents.*   costs up to float rounding, every other value exactly and of the same
approval_ids.*   type), after the chain is found intact
runs.*
===============  =====================================================================

Then what the events mean is checked: :mod:`.invariants` (an action settled once, its
intent first, a committed transition verified, ...), on the same snapshot.

Every text column must hold text (a BLOB with the same bytes compares unequal in the
runtime's queries); the schema — tables, columns, indexes (the UNIQUE index on
``idem_key`` is what makes a key claimable once), triggers, views — must be exactly
the one :mod:`.store` creates, ``PRAGMA user_version`` must be the journal format, and
every index must hold exactly its table's rows (``PRAGMA integrity_check``).

The file is opened without ever writing to it or next to it: a journal with no ``-wal``
is opened ``immutable`` (and re-read the ordinary way if a writer appeared meanwhile);
one with a live ``-wal`` and ``-shm`` is opened ``mode=ro`` with a read-only ``-shm``;
a ``-wal`` left without its ``-shm`` is recovered from a private copy, refused when the
temporary folder has no room for it. A ``-wal`` or ``-shm`` that is not a regular file (a
link, a pipe, a device) is reported broken, never read. The head and the
chain are read in one read transaction, so a concurrent writer cannot cause a false
break, and rows are streamed, so memory stays constant.
"""

from __future__ import annotations

import logging
import re
import shutil
import sqlite3
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from . import invariants
from . import sqlite_derived as derived
from .chain import (
    GENESIS_HASH,
    JOURNAL_FORMAT,
    READ_AS_IS_FORMATS,
    SCHEMA_STATEMENTS,
    UPGRADABLE_FORMATS,
    Anchor,
    ChainReport,
    Progress,
)
from .digest_check import (
    SECRET_DECISIONS_SQL,
    STORED_KEY_SQL,
    key_problem,
    stored_key_problem,
)
from .walk import COLUMNS, ChainBroken, walk

_SQLITE_MAGIC = b"SQLite format 3\x00"
_log = logging.getLogger(__name__)


class _Retry(Exception):
    """Internal: a writer appeared during an immutable read; read again."""


def verify_journal(path: Path, *, anchor: Anchor | None = None,
                   progress: Progress | None = None, semantics: bool = False) -> ChainReport:
    """Recompute the chain of the journal at ``path``; never writes to it.

    A missing, empty or unreadable journal, a missing genesis or head, a schema that is
    not the journal's, and an ``anchor`` the journal does not contain all count as
    broken, with the reason named.
    """
    for _ in range(5):
        try:
            with _open_readonly(path) as conn:
                return _verify(conn, anchor, progress, semantics, path=path)
        except _Retry:
            continue
        except ChainBroken as broken:
            return ChainReport(False, broken.events, GENESIS_HASH, broken.seq,
                               broken.event_id, broken.reason)
        except (sqlite3.Error, OSError) as exc:
            return ChainReport(False, 0, GENESIS_HASH, None, None,
                               f"the journal `{path}` cannot be read: {exc}")
    return ChainReport(False, 0, GENESIS_HASH, None, None,
                       f"the journal `{path}` kept changing while it was read")


# --- opening without writing ----------------------------------------------------------

def _uri(path: Path, params: str) -> str:
    return f"file:{quote(str(path.resolve()))}?{params}"


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_size, st.st_mtime_ns


@contextmanager
def _open_readonly(path: Path) -> Iterator[sqlite3.Connection]:
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    if not path.exists():
        extra = f" (but `{wal.name}` exists: a WAL without its database)" if wal.exists() else ""
        raise ChainBroken(f"there is no journal at `{path}`{extra}")
    if not path.is_file():
        raise ChainBroken(f"`{path}` is not a file")
    with path.open("rb") as fh:
        magic = fh.read(len(_SQLITE_MAGIC))
    if not magic:
        raise ChainBroken(f"the journal `{path}` is a 0-byte file: it holds no events")
    if magic != _SQLITE_MAGIC:
        raise ChainBroken(f"`{path}` is not a SQLite database")
    for side in (wal, shm):
        _regular_or_absent(side)
    if wal.exists() and shm.exists():
        # a live (or crashed) writer: read its WAL through a read-only -shm
        with _connect(_uri(path, "mode=ro&readonly_shm=1")) as conn:
            yield conn
        return
    if wal.exists() or shm.exists():
        # WAL without -shm (or the reverse): recover a private copy, never the original
        with tempfile.TemporaryDirectory(prefix="cradle-verify-") as tmp:
            _room_for(Path(tmp), path, wal)
            copy = Path(tmp) / "journal.sqlite"
            shutil.copyfile(path, copy)
            if wal.exists():
                shutil.copyfile(wal, Path(f"{copy}-wal"))
            with _connect(str(copy), uri=False) as conn:
                yield conn
        return
    # INVARIANT: no -wal means no open connection and nothing unchecked: the file alone
    # is the journal. If a writer opens it while we read, re-read the ordinary way.
    before = _stamp(path)
    with _connect(_uri(path, "mode=ro&immutable=1")) as conn:
        yield conn
    if wal.exists() or _stamp(path) != before:
        raise _Retry


def _regular_or_absent(side: Path) -> None:
    """A ``-wal`` or ``-shm`` is a regular file SQLite wrote, or nothing: a link (to
    ``/dev/zero``: copied until the disk was full), a pipe or a device is the file's
    author's, never SQLite's (``tests/security/test_292``)."""
    try:
        mode = side.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise ChainBroken(f"`{side.name}` beside the journal is not a regular file (a link, "
                          "a pipe or a device): SQLite never writes one; it was not read")


#: room left in the temporary folder beyond a private copy (bytes)
_COPY_MARGIN = 64 << 20


def _room_for(tmp: Path, *files: Path) -> None:
    """Refuse a private copy the temporary folder has no room for, before a byte of it is
    written: a sparse ``-wal`` (a terabyte of holes) filled the disk."""
    need = sum(f.stat().st_size for f in files if f.exists())
    free = shutil.disk_usage(tmp).free
    if need + _COPY_MARGIN > free:
        raise ChainBroken(f"there is no room in `{tmp.parent}` to read the journal and its WAL "
                          f"from a private copy: they hold {need:,} bytes, {free:,} are free "
                          "(a WAL this large is not one SQLite wrote, or free some space)")


@contextmanager
def _connect(target: str, *, uri: bool = True) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(target, uri=uri, isolation_level=None, timeout=30.0,
                           check_same_thread=False)
    try:
        conn.execute("PRAGMA busy_timeout=30000")
        yield conn
    finally:
        conn.close()


# --- checking -------------------------------------------------------------------------

#: a journal's schema, row by row
MASTER_SQL = "SELECT type, name, tbl_name, sql FROM sqlite_master"


def _expected_schema() -> set[tuple[str, str, str, str | None]]:
    conn = sqlite3.connect(":memory:")
    try:
        for statement in SCHEMA_STATEMENTS:
            conn.execute(statement)
        return set(conn.execute(MASTER_SQL))
    finally:
        conn.close()


#: what SQLite's tokenizer reads as whitespace — these five only: a no-break space or any
#: other Unicode space is part of a name to SQLite (``INTEGER\u00a0PRIMARY KEY`` is a type
#: name, no key: ``tests/security/test_562``), where Python's ``\s`` matched it
_SQL_SPACE = " \t\n\f\r"
#: a string or a quoted name (kept as written), or a run of whitespace between two tokens
_SPACE_OR_QUOTED = re.compile(
    r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|\[[^\]]*\]|" + f"[{_SQL_SPACE}]+")


def _as_tokens(row: tuple[str, str, str, str | None]) -> tuple[str, str, str, str | None]:
    """A ``sqlite_master`` row with each run of whitespace between tokens of its SQL one
    space: SQLite keeps an object's text as its ``CREATE`` was written, and a release of
    the same format wrapped a line (``events_subject_outcome``, format 8:
    ``tests/security/test_562``). Nothing else is read otherwise: a string, a quoted name
    or a comment is compared as written."""
    kind, name, table, sql = row
    if sql is None:
        return row
    return kind, name, table, _SPACE_OR_QUOTED.sub(
        lambda m: " " if m.group()[0] in _SQL_SPACE else m.group(), sql)


_EXPECTED = {_as_tokens(row) for row in _expected_schema()}


def _verify(conn: sqlite3.Connection, anchor: Anchor | None,
            progress: Progress | None, semantics: bool = False, *, path: Path) -> ChainReport:
    # INVARIANT: head and chain come from one read transaction (one snapshot)
    conn.execute("BEGIN")
    try:
        _check_schema(conn, path)
        _check_structure(conn)
        head = conn.execute("SELECT seq, hash FROM head").fetchall()
        report = walk(conn.execute(f"SELECT {COLUMNS} FROM events ORDER BY seq"), head,
                      anchor, progress)
        if report.intact:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            mismatch = derived.compare(conn, READ_AS_IS_FORMATS.get(version, frozenset()))
            if mismatch is None:  # the key beside the chain still makes its digests
                stored = conn.execute(STORED_KEY_SQL).fetchone()
                mismatch = stored_key_problem(stored[0]) if stored else None
                if mismatch is None:
                    mismatch = key_problem(conn.execute(SECRET_DECISIONS_SQL),
                                           bytes(stored[0]) if stored else None)
            if mismatch is not None:
                report = ChainReport(False, report.events, report.head_hash, None, None,
                                     mismatch)
        if report.intact and semantics:
            report = invariants.report(report, invariants.check("sqlite", conn.execute))
    finally:
        conn.execute("COMMIT")
    return report


def _check_schema(conn: sqlite3.Connection, path: Path) -> None:
    found = set(conn.execute(MASTER_SQL))
    if not found:
        raise ChainBroken("the journal has no tables: it was emptied or never written")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version != JOURNAL_FORMAT and version not in READ_AS_IS_FORMATS:
        upgrade = (" (open it once with this cradle-kg to upgrade it: same events, same "
                   "hashes)" if version in UPGRADABLE_FORMATS else "")
        raise ChainBroken(f"the journal is format `{version or 1}`, not `{JOURNAL_FORMAT}`: "
                          f"written by an older cradle-kg{upgrade} or altered")
    mismatch = schema_problem(found, version=version)
    if mismatch is not None:
        raise ChainBroken(mismatch)
    read_as_is(path, version)


#: the derived tables (what a warning calls a table, not an index)
_TABLES = frozenset(d.table for d in derived.DERIVATIONS)
#: the journals already said to be read as they are, by this process (one line each)
_SAID: set[str] = set()


def read_as_is(path: Path, version: int) -> None:
    """Say once, in one warning line, that the journal at ``path`` of the older format
    ``version`` (one of :data:`READ_AS_IS_FORMATS`) is read as it is; nothing for this
    format."""
    lacks = READ_AS_IS_FORMATS.get(version)
    if lacks is None or str(path) in _SAID:
        return
    _SAID.add(str(path))
    _log.warning("warning: the journal `%s` is format `%d` (the previous release's): read "
                 "as it is, without the %s of format `%d` (slower reads, the same answers); "
                 "a runtime that opens it to write upgrades it in place", path, version,
                 ", ".join(f"{'table' if name in _TABLES else 'index'} `{name}`"
                           for name in sorted(lacks)), JOURNAL_FORMAT)


def schema_problem(found: set[tuple[str, str, str, str | None]], *,
                   missing: bool = True, version: int = JOURNAL_FORMAT) -> str | None:
    """How a journal's ``sqlite_master`` rows (type, name, table, SQL) differ from the
    schema this code writes, naming the first object that differs, or None (``missing``
    False: an object missing is not a difference, one altered is). Read by ``audit
    verify`` and by every journal opened (``tests/security/test_352``). ``version``: the
    journal's format — one of :data:`READ_AS_IS_FORMATS` is compared with this format's
    schema less what it lacks (``test_375``)."""
    lacks = READ_AS_IS_FORMATS.get(version, frozenset())
    expected = {row for row in _EXPECTED if row[1] not in lacks}
    found = {_as_tokens(row) for row in found}
    for kind, name, _tbl, _sql in sorted(expected - found, key=str):
        same_name = any(f[1] == name for f in found)
        if same_name or missing:
            return f"the journal's {kind} `{name}` " + ("was altered" if same_name
                                                        else "is missing")
    for kind, name, _tbl, _sql in sorted(found - expected, key=str):
        return f"the journal has an unexpected {kind} `{name}`"
    return None


def _check_structure(conn: sqlite3.Connection) -> None:
    """Every index holds exactly its table's rows, and every page is where the file says.

    The schema's text (above) is what ``sqlite_master`` says; the b-trees are whatever the
    file's author wrote. An index built over some rows only and then given the plain
    definition (``PRAGMA writable_schema``) reads as the runtime's, and every query SQLite
    answers through it — the derived tables recomputed here, the invariants, ``runs list``
    — misses the rows left out (``tests/security/test_291``). SQLite's own check walks
    each table and each of its indexes once."""
    problem = conn.execute("PRAGMA integrity_check(1)").fetchone()
    if problem is None or problem[0] != "ok":
        found = " ".join(str(problem[0]).replace("*** in database main ***", "").split()) \
            if problem else "no answer"
        raise ChainBroken(f"the journal's file is not what its schema says ({found[:200]}): "
                          "an index or a page was written by something other than SQLite's "
                          "own writes")


__all__ = ["MASTER_SQL", "read_as_is", "schema_problem", "verify_journal"]
