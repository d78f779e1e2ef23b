"""Attack review (a SQLite journal handed over, or edited beside a runtime): altered objects.

A journal file holds its own schema, and every byte of it is its author's. A trigger or a
view was already refused (``test_293``); but an index or a table redefined under the name
the runtime creates was kept: the opening's ``CREATE … IF NOT EXISTS`` saw the name and
left it. ``events_idem_key`` made a plain index let one idempotency key be claimed twice
(the tool runs twice); ``approval_ids``' unique index made plain let one approval id be
requested twice. Only ``audit verify`` said so. Now a journal opened to write must hold
exactly the schema this code writes (the rows ``audit verify`` compares) and is refused
naming the object; a command that only reads still reads it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import JournalError
from cradle_kg.storage import IdempotencyKeyTaken, open_journal, verify_journal
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli
from tests.security.handed import HIDDEN, author, digest, handed_home, keyed_intent

pytestmark = pytest.mark.sqlite_only("the SQLite file's own schema")

#: each alteration (statements run by the file's author), and what the refusal names
ALTERATIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "idempotency index made plain": ((
        "DROP INDEX events_idem_key",
        "CREATE INDEX events_idem_key ON events(idem_key) WHERE idem_key IS NOT NULL"),
        "index `events_idem_key` was altered"),
    "approval index made plain": ((
        "DROP INDEX approval_ids_id", "CREATE INDEX approval_ids_id ON approval_ids(approval_id)"),
        "index `approval_ids_id` was altered"),
    "an index of its own": (("CREATE INDEX extra ON events(actor)",),
                            "unexpected index `extra`"),
}


def _handed(factory: pytest.TempPathFactory, name: str, alteration: str) -> Path:
    home = handed_home(factory, name)
    conn = author(home / "journal.sqlite")
    for statement in ALTERATIONS[alteration][0]:
        conn.execute(statement)
    conn.close()
    return home


@pytest.mark.parametrize("alteration", sorted(ALTERATIONS))
def test_a_journal_whose_schema_was_altered_is_not_opened_to_write(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        alteration: str) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = _handed(tmp_path_factory, f"t352-{len(alteration)}", alteration)
    journal = home / "journal.sqlite"
    before = digest(journal)
    named = ALTERATIONS[alteration][1]
    with pytest.raises(JournalError) as refused:
        open_journal(journal)
    assert named in refused.value.message and "not opened to write" in refused.value.message
    with pytest.raises(JournalError, match=named):
        Runtime(home)
    assert digest(journal) == before  # nothing written, not even switched to WAL
    res = run_cli("runs", "show", HIDDEN, "--home", str(home))  # a reader still reads
    assert res.returncode == 0 and HIDDEN in res.stdout, res.stdout + res.stderr
    assert named in str(verify_journal(journal).reason)


def test_the_plain_index_would_let_a_key_be_claimed_twice(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the index refuses, on the journal as this code writes it — and the altered
    file is refused before any claim."""
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = handed_home(tmp_path_factory, "t352-claim")
    with open_journal(home / "journal.sqlite") as j:
        j.append([keyed_intent(1, "t352")])
        with pytest.raises(IdempotencyKeyTaken):
            j.append([keyed_intent(2, "t352")])
    altered = _handed(tmp_path_factory, "t352-claim-altered", "idempotency index made plain")
    with pytest.raises(JournalError, match="events_idem_key"):
        open_journal(altered / "journal.sqlite")
