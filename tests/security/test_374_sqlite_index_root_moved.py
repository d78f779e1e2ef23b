"""Attack review (a SQLite journal handed over): a unique index whose b-tree was swapped.

Finding (left open by the twenty-first round's review): the writable open compares the
journal's ``sqlite_master`` rows with the schema this code writes (``test_352``), not the
b-trees. The file's author made an empty index (``WHERE … AND 0``), pointed
``events_idem_key``'s ``rootpage`` at its b-tree with ``PRAGMA writable_schema`` and
removed its row: the schema's text is unchanged, the index is empty, and a key already
claimed is claimed again (the tool runs twice); any unique index so swapped (``runs_id``:
a run counted as new again) holds its rows no more. Only ``audit verify`` said so
(``PRAGMA integrity_check``, ``test_291``), which reads every page.

Now a writable open probes each unique index of the schema with the newest and the oldest
rows of its table (bounded: ``sqlite_keys.PROBE_ROWS`` rows from each end, at most
``PROBES`` looked up): each must be found through the index at its own row. A swapped,
emptied or stale index is refused naming it, before a byte is written; a command that only
reads still reads the file. (A b-tree crafted to hold every key but one chosen old key
passes the probe: ``audit verify`` finds it; the README gives the figures.)
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import JournalError
from cradle_kg.storage import open_journal, verify_journal
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli
from tests.security.handed import HIDDEN, author, digest, handed_home, keyed_intent

pytestmark = pytest.mark.sqlite_only("the SQLite file's own b-trees")

#: each index swapped, and the rows its empty twin is made with
SWAPPED = {
    "events_idem_key": "CREATE UNIQUE INDEX twin ON events(idem_key) "
                       "WHERE idem_key IS NOT NULL AND 0",
    "runs_id": "CREATE UNIQUE INDEX twin ON runs(run_id) WHERE run_id IS NULL",
}


def _swap(journal: Path, index: str) -> None:
    """Point ``index`` at an empty b-tree of the same shape; its SQL text is unchanged."""
    conn = author(journal)
    try:
        conn.execute(SWAPPED[index])
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'twin'"
                            ).fetchone()[0]
        conn.execute("PRAGMA writable_schema=ON")
        conn.execute("UPDATE sqlite_master SET rootpage = ? WHERE name = ?", (root, index))
        conn.execute("DELETE FROM sqlite_master WHERE name = 'twin'")
        version = conn.execute("PRAGMA schema_version").fetchone()[0]
        conn.execute(f"PRAGMA schema_version = {version + 1}")
        conn.execute("PRAGMA writable_schema=OFF")
    finally:
        conn.close()


@pytest.mark.parametrize("index", sorted(SWAPPED))
def test_a_swapped_unique_index_is_not_opened_to_write(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        index: str) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = handed_home(tmp_path_factory, f"t374-{index}")
    journal = home / "journal.sqlite"
    with open_journal(journal) as j:
        j.append([keyed_intent(1, "t374")])
    _swap(journal, index)
    before = digest(journal)
    with pytest.raises(JournalError) as refused:
        open_journal(journal)  # was: opened, and the key claimed again (below)
    message = refused.value.message
    assert f"index `{index}`" in message and "not opened to write" in message, message
    with pytest.raises(JournalError, match=index):
        Runtime(home)
    assert digest(journal) == before  # nothing written, not even switched to WAL
    res = run_cli("runs", "show", HIDDEN, "--home", str(home))  # a reader still reads
    assert res.returncode == 0 and HIDDEN in res.stdout, res.stdout + res.stderr
    report = verify_journal(journal)
    assert not report.intact and "not what its schema says" in str(report.reason)


def test_what_the_swap_let_through(tmp_path: Path) -> None:
    """The attack itself, on a bare journal, with SQLite alone: the key goes in twice."""
    journal = tmp_path / "journal.sqlite"
    with open_journal(journal) as j:
        j.append([keyed_intent(1, "t374")])
    _swap(journal, "events_idem_key")
    conn = sqlite3.connect(journal)
    try:
        conn.execute("INSERT INTO events SELECT seq + 1, id || 'x', run_id, kind, subject, "
                     "actor, at, payload, payload_hash, prev_hash, hash, idem_key "
                     "FROM events NOT INDEXED WHERE idem_key = 'idem:t374'")
        assert conn.execute("SELECT count(*) FROM events NOT INDEXED "
                            "WHERE idem_key = 'idem:t374'").fetchone()[0] == 2
    finally:
        conn.close()


def test_a_journal_as_written_is_opened(tmp_path: Path) -> None:
    journal = tmp_path / "journal.sqlite"
    with open_journal(journal) as j:
        j.append([keyed_intent(1, "t374")])
    with open_journal(journal) as j:  # every probe finds its row
        assert j.head()[0] == 1
    open_journal(tmp_path / "new.sqlite").close()  # an empty journal has nothing to probe
