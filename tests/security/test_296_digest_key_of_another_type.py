"""Attack review (a journal handed to an auditor): a digest key that is not bytes.

The journal's digest key (``journal_keys``, beside the chain: the key of secret
arguments' digests) is declared ``BLOB``, so SQLite keeps whatever type is written there.
``audit verify`` read it with ``bytes(value)``: a text key raised ``TypeError``, ``-1``
``ValueError``, and an integer became that many zero bytes — ``2**40`` asked for a
terabyte (``MemoryError`` here; a few gigabytes are allocated, on the auditor's machine).
``replay`` and every reader of the key did the same. Now a key that is not the 32 bytes
the runtime writes is a broken journal (``audit verify``, named) and a typed
``JournalError`` for the readers, and nothing is allocated for it.
"""

from __future__ import annotations

import pytest

from cradle_kg.errors import JournalError
from cradle_kg.storage import verify_journal
from cradle_kg.storage.sqlite import SqliteJournal
from tests.security.handed import author, handed_home

pytestmark = pytest.mark.sqlite_only("the SQLite file's BLOB column")


@pytest.mark.parametrize("value", ["'digest-key'", "-1", str(2 ** 40), "x'00'", "1.5"],
                         ids=["text", "negative", "terabyte", "one-byte", "real"])
def test_a_digest_key_that_is_not_32_bytes_is_broken(
        tmp_path_factory: pytest.TempPathFactory, value: str) -> None:
    home = handed_home(tmp_path_factory, "t296")
    journal = home / "journal.sqlite"
    conn = author(journal)
    conn.execute(f"INSERT OR REPLACE INTO journal_keys (name, key) VALUES ('digest', {value})")
    conn.close()

    for semantics in (False, True):
        report = verify_journal(journal, semantics=semantics)
        assert not report.intact, report
        assert "journal_keys" in (report.reason or ""), report.reason
    with SqliteJournal(journal, read_only=True) as reader, \
            pytest.raises(JournalError, match="digest key"):
        reader.stored_digest_key()


def test_the_runtimes_own_key_still_verifies(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    home = handed_home(tmp_path_factory, "t296-own")
    journal = home / "journal.sqlite"
    with SqliteJournal(journal) as writer:
        key = writer.digest_key()
    assert len(key) == 32
    assert verify_journal(journal).intact
