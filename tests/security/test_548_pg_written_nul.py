"""Finding (twenty-fifth round, the PostgreSQL suite): ``lineage_written`` (``test_496``) was
read with the tokens of a trusted answer as a ``text[]`` parameter, and PostgreSQL text
cannot hold a NUL: a tool answer holding one made the look-up fail ("PostgreSQL text fields
cannot contain NUL (0x00) bytes"), the check failed closed, and AgentDojo's travel suite
denied ``get_hotels_address`` (utility 0/2 on PostgreSQL, 2/2 on SQLite).

Now a token holding a NUL is not asked about on PostgreSQL (no row's first token can hold
one); both journals answer the same look-ups otherwise. A written value holding a NUL is
appended and read back as SQLite does (checked here, it already was).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cradle_kg.storage import NewEvent, open_home_journal

AT = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_token_with_a_nul_is_asked_about_without_an_error(home: Path) -> None:
    # before (PostgreSQL): JournalError ... cannot contain NUL (0x00) bytes
    with open_home_journal(home) as journal:
        assert journal.written_untrusted(["a\x00b", "plain"], 10**9) == []


def test_a_written_value_with_a_nul_is_appended(home: Path) -> None:
    run = "run:nul"
    traced = NewEvent(run_id=run, kind="lineage.traced", subject="exec-nul",
                      actor="cradle-kg/runtime", at=AT,
                      payload={"written": [["evil\x00iban", "x"], ["gb29nwbk", "y"]]})
    observed = NewEvent(run_id=run, kind="action.observed", subject="act:nul",
                        actor="cradle-kg/gateway", at=AT,
                        payload={"observation": {"execution_id": "exec-nul"}})
    # before (PostgreSQL): the append failed (unsupported Unicode escape sequence)
    with open_home_journal(home) as journal:
        journal.append([traced, observed])
        assert journal.written_untrusted(["gb29nwbk"], 10**9) == [["gb29nwbk", "y"]]
        assert journal.verify().intact
