"""Attack review (someone with DDL rights on the journal's schema): an altered append function.

On PostgreSQL an append is ``cradle_append``, run by the server (:mod:`cradle_kg.storage.
pg_append`): it takes the append lock, checks the append's guards — a revoked approval
(``CK005``), an ended run (``CK004``), a subject that moved — and chains the events. Whoever
may run DDL on the schema (a DBA, a migration tool, another application's role) could
``CREATE OR REPLACE`` it with a version that skips a guard, and every runtime kept calling
it and trusting its answer: an intent under a revoked approval was written and the tool
ran. Only ``audit verify`` said so, afterwards. Now a journal opened to write reads the
catalog ``audit verify`` reads and refuses, naming the function and the command that
installs the migrations' own again (``cradle-kg db migrate``); one opened to read reads,
with a warning. The expected function is derived from the migrations' own SQL, so a
migration that rewrites it is covered by itself.
"""

from __future__ import annotations

import logging

import psycopg
import pytest

from cradle_kg.errors import JournalError
from cradle_kg.storage import ApprovalMoved, open_journal, pg_append, pg_schema
from cradle_kg.storage.pg_append import CALL_SQL, FUNCTION_SQL, call_args, function_sql
from cradle_kg.storage.pg_verify import catalog, verify_postgres
from tests.inprocess import run_cli
from tests.storage.test_pg_append import ev

#: the function with the approval guard's test made false: a revoke no longer refuses
_NO_APPROVAL_GUARD = FUNCTION_SQL.replace("IF (", "IF false AND (", 1)
#: alterations of the function, each of a guard or a setting the runtime relies on
ALTERATIONS: dict[str, tuple[str, ...]] = {
    "approval guard skipped": (_NO_APPROVAL_GUARD,),
    "run-end guard skipped": (FUNCTION_SQL.replace("f.kind <> ''", "false"),),
    "append lock skipped": (FUNCTION_SQL.replace("PERFORM pg_advisory_xact_lock(", "-- ("),),
    "run as its owner": ("ALTER FUNCTION cradle_append SECURITY DEFINER",),
    "a setting of its own": ("ALTER FUNCTION cradle_append SET search_path FROM CURRENT",),
    "results changed": ("DROP FUNCTION cradle_append", FUNCTION_SQL.replace(
        "OUT hashes text[])", "OUT hashes text[], OUT skipped boolean)")),
}


def run_ddl(url: str, statements: tuple[str, ...]) -> None:
    """The statements, run by someone else's connection (committed each)."""
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def _revoked(url: str) -> tuple[int, str]:
    """A journal holding an approval and its revoke; its head."""
    with open_journal(url) as j:
        j.append([ev(0, "approval.requested", subject="approval:ap",
                     payload={"approval": {"id": "ap"}})])
        j.append([ev(1, "approval.decided", subject="approval:ap",
                     payload={"approval_id": "ap", "status": "revoked"})])
        return j.head()


def test_the_altered_function_would_write_an_intent_under_a_revoked_approval(
        pg_url: str) -> None:
    """What the runtime trusted: called as the journal calls it, the altered function
    writes the intent the migrations' function refuses (``CK005``)."""
    head = _revoked(pg_url)
    row = ("run:a", "action.intent", "s:9", "agent:a", "2026-01-01T00:00:09+00:00", "{}",
           "sha256:x", None, b"", b"", b"", b"")
    args = call_args([row], [], [], [], ["ap"], 0, "c")
    with psycopg.connect(pg_url) as conn:
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(CALL_SQL, args)
        assert refused.value.sqlstate == pg_append.APPROVAL_REVOKED
        conn.rollback()
        conn.execute(_NO_APPROVAL_GUARD)
        assert conn.execute(CALL_SQL, args).fetchone()[0] == head[0]  # written
        conn.rollback()  # nothing of it kept


@pytest.mark.parametrize("alteration", sorted(ALTERATIONS))
def test_a_journal_whose_append_function_was_altered_is_not_opened_to_write(
        pg_url: str, alteration: str) -> None:
    head = _revoked(pg_url)
    run_ddl(pg_url, ALTERATIONS[alteration])
    with pytest.raises(JournalError) as refused:
        open_journal(pg_url)
    message = " ".join(refused.value.message.split())
    assert "function `cradle_append` was altered" in message, message
    assert "not opened to write" in message, message
    assert "cradle-kg db migrate" in (refused.value.hint or "")
    assert "password" not in message and "postgresql://" in message
    with open_journal(pg_url, read_only=True) as j:
        assert j.head() == head  # nothing written


@pytest.mark.parametrize("alteration", sorted(ALTERATIONS))
def test_a_function_altered_while_a_journal_is_open_is_caught_at_its_next_append(
        pg_url: str, alteration: str) -> None:
    """A worker opened before the function was replaced: its next append (one round trip,
    through the function) fails before it commits — the intent under the revoked
    approval is not written — and says why."""
    with open_journal(pg_url) as j:
        head = _revoked(pg_url)
        j.append([ev(2)])  # the journal's first append: it knew the function
        run_ddl(pg_url, ALTERATIONS[alteration])
        with pytest.raises(JournalError) as refused:
            j.append([ev(3, "action.intent", uses="ap") if alteration.startswith("approval")
                      else ev(3)])  # (the others still refuse that intent themselves)
        message = " ".join(refused.value.message.split())
        assert "function `cradle_append` was altered" in message, message
        assert "the append was not written" in message
        assert j.head() == (head[0] + 1, j.head()[1])  # ev(2) only


#: a replaced function's refusals that name nothing of the append (SQLSTATE, detail)
LYING_REFUSALS = [(pg_append.APPROVAL_REVOKED, "x"), (pg_append.APPROVAL_REVOKED, "99"),
                  (pg_append.SUBJECT_MOVED, "0"), (pg_append.RUN_BEGUN, "t"),
                  (pg_append.RUN_ENDED, "workflow.ended")]


@pytest.mark.parametrize(("sqlstate", "detail"), LYING_REFUSALS)
def test_a_replaced_functions_refusal_that_names_nothing_is_a_typed_error(
        pg_url: str, sqlstate: str, detail: str) -> None:
    """A function replaced after the journal opened answers before the append's check
    runs: its refusal is taken for a guard's. One whose detail names no event, run or
    approval of the append (the migrations' function never gives one) ended the append
    in an IndexError or a ValueError; now a typed error naming the function."""
    body = FUNCTION_SQL.replace(
        "    -- the lock before the head", f"    RAISE EXCEPTION USING ERRCODE = '{sqlstate}', "
        f"MESSAGE = 'no', DETAIL = '{detail}';\n    -- the lock before the head", 1)
    assert body != FUNCTION_SQL
    with open_journal(pg_url) as j:
        j.append([ev(1)])
        head = j.head()
        run_ddl(pg_url, (body,))
        with pytest.raises(JournalError) as refused:
            j.append([ev(2)])
        assert "function `cradle_append` answered" in refused.value.message
        assert "cradle-kg db migrate" in (refused.value.hint or "")
        assert j.head() == head


def test_a_grant_on_the_function_is_not_an_alteration(pg_url: str) -> None:
    """The append's check compares the function's catalog row with the one the journal
    pinned; a change of its privileges moves the row, not the function: the journal
    finds it is the migrations' still, pins it anew and writes."""
    with open_journal(pg_url) as j:
        j.append([ev(1)])
        run_ddl(pg_url, ("REVOKE EXECUTE ON FUNCTION cradle_append FROM PUBLIC",))
        j.append([ev(2)])
        j.append([ev(3)])
        assert j.head()[0] == 3 and j.verify().intact


def test_a_journal_opened_to_read_is_read_with_a_warning(
        pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """A command that only reads (``runs list``, an auditor's) still reads the journal,
    says the function was altered, and ``audit verify`` reports it."""
    head = _revoked(pg_url)
    run_ddl(pg_url, ALTERATIONS["approval guard skipped"])
    with caplog.at_level(logging.WARNING, logger="cradle_kg.storage.postgresql"), \
            open_journal(pg_url, read_only=True) as j:
        assert j.head() == head and len(list(j.events())) == 2
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "function `cradle_append` was altered" in warned and "it is read" in warned
    report = verify_postgres(pg_url)
    assert not report.intact and "function `cradle_append` was altered" in str(report.reason)


@pytest.mark.parametrize("alteration", ["approval guard skipped", "results changed"])
def test_db_migrate_installs_the_migrations_function_again(pg_url: str,
                                                           alteration: str) -> None:
    """The repair the refusal names: ``db migrate`` replaces the altered function by the
    migrations' own (a changed result type too, which ``CREATE OR REPLACE`` cannot
    replace); the journal opens, and the guard refuses again."""
    _revoked(pg_url)
    run_ddl(pg_url, ALTERATIONS[alteration])
    res = run_cli("db", "migrate", "--journal", pg_url)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "restored function cradle_append" in res.stdout, res.stdout
    assert "restored" not in run_cli("db", "migrate", "--journal", pg_url).stdout  # once
    with open_journal(pg_url) as j:
        head = j.head()
        with pytest.raises(ApprovalMoved):
            j.append([ev(2, "action.intent", uses="ap")])
        assert j.head() == head and j.verify().intact


def test_the_expected_function_is_derived_from_the_migrations(pg_url: str) -> None:
    """The function's line is the migrations' SQL's (no digest written by hand): the live
    one equals it, a later migration that rewrites the function changes it by itself, and
    a migration that drops a signature takes it back."""
    from cradle_kg.storage.pg_objects import function_lines

    with psycopg.connect(pg_url) as conn:
        live = {line for line in catalog(conn) if line.startswith("function ")}
    assert live == function_lines(pg_schema.STATEMENTS) and len(live) == 1
    later = (*pg_schema.STATEMENTS, _NO_APPROVAL_GUARD)
    assert function_lines(later) != live and len(function_lines(later)) == 1
    older = function_sql(run_end=True)  # migration 15's: another signature
    assert function_lines((older,)) != live
    assert function_lines((older, f"DROP FUNCTION IF EXISTS {pg_append.RUN_END_SIGNATURE}",
                           FUNCTION_SQL)) == live
