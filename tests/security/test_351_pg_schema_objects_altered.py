"""Attack review (DDL rights on the journal's schema): objects beside the function, altered.

What the runtime relies on is not only ``cradle_append`` (``test_350``): an idempotency
key is claimed once by the unique index ``events_idem_key`` (made plain, the same key is
claimed twice and the tool runs twice); a trigger or a rule on ``events`` runs with every
append (it can rewrite, drop or copy what is written); row-level security decides which
rows a guard reads. Each was trusted until ``audit verify`` ran. Now a journal opened to
write refuses a schema that is not exactly the migrations' — the same catalog ``audit
verify`` reads — and names the object.
"""

from __future__ import annotations

import psycopg
import pytest

from cradle_kg.errors import JournalError
from cradle_kg.storage import IdempotencyKeyTaken, UsageCap, open_journal
from tests.security.test_350_pg_append_function_altered import run_ddl
from tests.storage.test_pg_append import T0, ev

#: the idempotency index, made plain (same name, same column)
_PLAIN_INDEX = ("DROP INDEX events_idem_key",
                "CREATE INDEX events_idem_key ON events(idem_key) WHERE idem_key IS NOT NULL")
#: each alteration, and what the refusal names
ALTERATIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "idempotency index made plain": (_PLAIN_INDEX, "index `events_idem_key` was altered"),
    "a trigger on events": ((
        "CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RETURN NEW; END $$",
        "CREATE TRIGGER keep BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION keep()"),
        "unexpected function `keep`"),  # the first difference named: then its trigger
    "a rule dropping open intents": ((
        "CREATE RULE still AS ON INSERT TO open_intents DO INSTEAD NOTHING",),
        "unexpected rule `still`"),
    "row-level security": (("ALTER TABLE events ENABLE ROW LEVEL SECURITY",
                            "CREATE POLICY hide ON events USING (kind <> 'approval.decided')"),
                           "relation `events` was altered"),
    "a constraint dropped": (("ALTER TABLE events DROP CONSTRAINT events_id_key",),
                             "constraint `events.events_id_key` is missing"),
}


def test_a_plain_idempotency_index_let_a_key_be_claimed_twice(pg_url: str) -> None:
    """What the index is for: the second claim of a key is refused (made plain, nothing
    would refuse it). A journal opened after the change is refused."""
    with open_journal(pg_url) as j:
        j.append([ev(1, "action.intent", key="idem:k")])
        with pytest.raises(IdempotencyKeyTaken):
            j.append([ev(2, "action.intent", key="idem:k")])
    run_ddl(pg_url, _PLAIN_INDEX)
    with pytest.raises(JournalError, match="index `events_idem_key` was altered"):
        open_journal(pg_url)


@pytest.mark.parametrize("alteration", sorted(ALTERATIONS))
def test_a_journal_whose_objects_were_altered_is_not_opened_to_write(
        pg_url: str, alteration: str) -> None:
    with open_journal(pg_url) as j:
        j.append([ev(1)])
        head = j.head()
    statements, named = ALTERATIONS[alteration]
    run_ddl(pg_url, statements)
    with pytest.raises(JournalError) as refused:
        open_journal(pg_url)
    message = " ".join(refused.value.message.split())
    assert named in message and "not opened to write" in message, message
    assert "audit verify" in (refused.value.hint or "")
    with open_journal(pg_url, read_only=True) as j:  # read, with a warning
        assert j.head() == head


#: the two ways an append is written: one round trip (the server's function), two (the
#: rows from the client: an intent under a cap)
TRIPS = {"one trip": {}, "two trips": {"caps": (UsageCap(scope="*", subject="", since=T0,
                                                           max_calls=100),)}}


#: what an append checks besides the function: the chain's tables and the claim's index
#: (the others — a rule on a derived table, a constraint dropped — at the next open)
AT_APPEND = ("a trigger on events", "idempotency index made plain", "row-level security")


@pytest.mark.parametrize("trip", sorted(TRIPS))
@pytest.mark.parametrize("alteration", AT_APPEND)
def test_objects_altered_while_a_journal_is_open_are_caught_at_its_next_append(
        pg_url: str, alteration: str, trip: str) -> None:
    """A worker opened before the change: its next append fails before it commits,
    naming the object, nothing written — a key claimed again through a plain index too."""
    statements, named = ALTERATIONS[alteration]
    with open_journal(pg_url) as j:
        j.append([ev(1, "action.intent", key="idem:k", **TRIPS[trip])])
        head = j.head()
        run_ddl(pg_url, statements)
        with pytest.raises(JournalError) as refused:
            j.append([ev(2, "action.intent", key="idem:k" if "idempotency" in alteration
                         else "idem:other", **TRIPS[trip])])  # (kept: the index refuses)
        message = " ".join(refused.value.message.split())
        assert named in message and "the append was not written" in message, message
        assert j.head() == head


def test_a_table_rewritten_in_place_is_not_an_alteration(pg_url: str) -> None:
    """``VACUUM FULL`` gives a table new storage (its catalog row moves), not a new
    definition: the journal reads the catalog again, pins it anew and writes."""
    with open_journal(pg_url) as j:
        j.append([ev(1)])
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("VACUUM FULL events")
        j.append([ev(2)])
        j.append([ev(3, caps=TRIPS["two trips"]["caps"])])
        assert j.head()[0] == 3 and j.verify().intact
