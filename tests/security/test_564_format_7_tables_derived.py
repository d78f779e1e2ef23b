"""A format 7 journal as the release that made format 7 wrote it keeps its budgets when upgraded.

Finding (the twenty-sixth review: the upgrade path): SQLite format 7 was defined four times
without a new number — ``310f1d2`` made it with ``human_tasks`` and ``repairs``,
``10b744a`` added ``undecided_approvals``, ``c82dd35`` ``open_steps``, ``870d221``
``budget_sets``, each still stamped 7. The upgrade derives from the events only the
tables *later* formats added (for 7: ``approval_exclusions``, ``starting_runs``,
``unrun_approvals``, ``lineage_written``); any other table the file lacked was created
empty by the opening's ``CREATE … IF NOT EXISTS``. A journal written by ``310f1d2``
(made by that commit's code, ``budgets set --level tenant --limit 5``, then opened by this
one): the budget was gone — ``budgets status`` listed none, so none was enforced — the
approvals waiting were no longer waiting (``undecided_approvals`` empty: not in any inbox,
not counted by ``waiting_per_agent``), and ``audit verify`` called the honest file BROKEN
("the derived table `budget_sets` does not match the events").

PostgreSQL's migration 8 was redefined the same way (``human-tasks-and-repairs`` in
``310f1d2`` and ``10b744a``, then ``inbox-and-repairs`` with ``open_steps``,
``budget_sets`` and the index ``approval_ids_seq``): a journal migrated by the first is
refused by every worker — "is at schema version `18`; this cradle-kg needs `18`", hint
"upgrade cradle-kg", though it is the newest — and ``db migrate`` said "schema up to
date": no way back. (Both found by running each format's and migration's own code, the
demo and a budget, then this code's upgrade, ``db migrate`` and ``audit verify``.)

Now a SQLite upgrade derives from the events every derived table the file did not hold,
whatever its format said (every table before format 6, as before); ``db migrate`` makes
migration 8's missing tables and indexes, derives the tables from the events under the
append lock and records the migration under its name; the refusal names the migration
that differs and says to run ``db migrate``.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import JournalError
from cradle_kg.storage import JOURNAL_FORMAT, verify_journal
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli
from tests.security.handed import author, copied_home
from tests.security.homes import credit, opened_demo_home

#: PostgreSQL migration 8 as ``310f1d2`` defined it: ``human_tasks`` and ``repairs`` only
FIRST_MIGRATION_8 = (
    "DROP TABLE undecided_approvals", "DROP TABLE open_steps", "DROP TABLE budget_sets",
    "DROP INDEX approval_ids_seq",
    "UPDATE schema_migrations SET name = 'human-tasks-and-repairs' WHERE version = 8")

#: the tables ``310f1d2`` (format 7) did not make, and the indexes of the events it did not
#: (``cradle_kg/storage/chain.py`` and ``sqlite_derived.py`` there): dropping a table drops
#: its indexes
NOT_IN_310F1D2 = ("undecided_approvals", "open_steps", "budget_sets", "journal_keys",
                  "approval_exclusions", "starting_runs", "unrun_approvals", "lineage_written")
EVENT_INDEXES_AFTER = ("events_subject_outcome", "events_outcome", "events_subject_decided")


def _set_budget(home: Path) -> None:
    set_ = run_cli("budgets", "set", "--level", "tenant", "--limit", "5", "--as", APPROVER,
                   "--home", str(home), env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert set_.returncode == 0, set_.stdout + set_.stderr
    assert _budgets(home) == [("tenant", "*", 5.0)]


def _budgets(home: Path) -> list[tuple[str, str, float]]:
    shown = run_cli("budgets", "status", "--home", str(home), "--format", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    return [(r["level"], r["budget_subject"], r["limit"]) for r in json.loads(shown.stdout)]


@pytest.fixture
def format_7_home(tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    """A demo home with two credits and a tenant budget of 5, its journal as ``310f1d2``
    left it."""
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = copied_home(tmp_path_factory, "t564")
    _set_budget(home)
    conn = author(home / "journal.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM journal_keys").fetchone() == (0,)
    for table in NOT_IN_310F1D2:
        conn.execute(f"DROP TABLE {table}")
    for index in EVENT_INDEXES_AFTER:
        conn.execute(f"DROP INDEX {index}")
    conn.execute("PRAGMA user_version = 7")
    conn.close()
    return home


@pytest.mark.sqlite_only("the SQLite file's own format and tables")
def test_an_upgraded_format_7_journal_keeps_its_budget(format_7_home: Path) -> None:
    with Runtime(format_7_home):  # upgraded in place
        pass
    conn = author(format_7_home / "journal.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == JOURNAL_FORMAT
    conn.close()
    assert _budgets(format_7_home) == [("tenant", "*", 5.0)]  # before: []
    report = verify_journal(format_7_home / "journal.sqlite")
    assert report.intact, report.reason  # before: `budget_sets` does not match the events


def test_a_journal_at_the_first_migration_8_is_completed(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        pg_url: str) -> None:
    monkeypatch.setenv(JOURNAL_URL_ENV, pg_url)
    home = opened_demo_home(tmp_path_factory, "t564pg")
    with Runtime(home) as rt:
        assert rt.submit(credit("p-1")).status.value == "executed"
    _set_budget(home)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for statement in FIRST_MIGRATION_8:
            conn.execute(statement)
    with pytest.raises(JournalError) as refused:
        Runtime(home)
    assert "its migration `8` is `human-tasks-and-repairs`" in refused.value.message
    assert "db migrate" in (refused.value.hint or "")  # before: "upgrade cradle-kg"
    migrated = run_cli("db", "migrate", "--home", str(home))
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    with Runtime(home):  # before: refused again, "needs `18`"
        pass
    assert _budgets(home) == [("tenant", "*", 5.0)]
    verified = run_cli("audit", "verify", "--home", str(home))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    again = run_cli("db", "migrate", "--home", str(home))  # done once
    assert "applied" not in again.stdout, again.stdout
