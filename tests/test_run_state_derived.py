"""A run's state is derived state (issue 17, target 1): the journal's ``run_state`` table,
kept in the append's transaction, gives what folding each run's events gives — on the demo
home (the pilots included) and workflow runs with human steps, on both backends — is
rebuilt when an older journal is upgraded, and an edited row breaks ``audit verify``."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, run_demo
from cradle_kg.runs import (
    RunState,
    RunSummary,
    folded_summary,
    list_page,
    show_run,
    state_counts,
    state_of,
)
from cradle_kg.storage import JOURNAL_URL_ENV, Journal, SqliteJournal, verify_journal
from cradle_kg.storage.pg_admin import migrate
from cradle_kg.workflow import runner

from .demo_template import demo_template, embedded
from .server.conftest import close_proposal

pytestmark = pytest.mark.usefixtures("journal_backend")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "workflows"
INPUT = {"account": "acct-5", "amount": 15, "reason": "a refund"}


def _varied_home(home: Path, factory: pytest.TempPathFactory) -> None:
    """The demo with its pilots, a close left waiting for approval, and three workflow
    runs: one waiting for a person, one answered (completed), one started and left.

    On an embedded home the demo is a copy of the run's (``tests/demo_template.py``, built
    once: ~13 s each time here); on PostgreSQL the journal is not in the folder: built."""
    if embedded():
        shutil.copytree(demo_template(factory, pilots=True)[0], home, symlinks=True)
    else:
        run_demo(home, pilots=True)
    (home / "workflows").mkdir()
    shutil.copy(EXAMPLES / "credit-review.yaml", home / "workflows")
    flow = home / "workflows" / "credit-review.yaml"
    with Runtime(home) as rt:
        assert rt.submit(close_proposal("acct-8")).approval is not None
        engine = runner.open_engine(rt)
        runs = [runner.start(engine, flow, INPUT)["run_id"] for _ in range(2)]
        runner.decide(rt, engine, str(runs[1]), "review", by=APPROVER,
                      token=DEMO_TOKENS[APPROVER], answer="pay")


def _folded(journal: Journal) -> list[RunSummary]:
    """Every listed run folded from its own events (the definition the table must meet)."""
    listed = {e.run_id for e in journal.events()
              if e.kind in ("proposal.received", "workflow.started")}
    folded = [folded_summary(r, journal.events(run_id=r)) for r in journal.run_ids()
              if r in listed]
    # the summary the runs page reads (bounded: test_89) is the folded one on these runs
    assert [show_run(journal, s.run_id)[0] for s in folded] == folded
    return folded


@pytest.mark.slow
def test_derived_state_equals_the_folded_state(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    home = tmp_path / "home"
    _varied_home(home, tmp_path_factory)
    with Runtime(home, graph_sync=False) as rt:
        folded = _folded(rt.journal)
        assert any(s.waiting_steps for s in folded) and any(s.finished for s in folded)
        keys = Counter(s.key for s in folded)
        assert dict(rt.journal.run_state_groups()) == dict(keys)
        states = Counter(s.state.value for s in folded)
        assert state_counts(rt.journal) == {s.value: states.get(s.value, 0) for s in RunState}
        # the varied home reaches every state
        assert all(states[s.value] for s in RunState), states
        for state in RunState:
            want = [s.run_id for s in folded if s.state is state][::-1]
            page, total = list_page(rt.journal, limit=2, offset=1, newest_first=True,
                                    state=state)
            assert total == len(want) and [s.run_id for s in page] == want[1:3]
            assert all(s.state is state and state_of(s.key) is state for s in page)
        everything, total = list_page(rt.journal, limit=None)
        assert [s.run_id for s in everything] == [s.run_id for s in folded] and total == len(
            folded)


def _edit_row(home: Path, sql: str) -> None:
    url = os.environ.get(JOURNAL_URL_ENV)
    if url:
        with psycopg.connect(url) as conn:
            conn.execute(sql)
    else:
        conn = sqlite3.connect(home / "journal.sqlite")
        conn.execute(sql)
        conn.commit()
        conn.close()


def _verify(home: Path) -> tuple[bool, str | None]:
    with Runtime(home, graph_sync=False) as rt:
        report = rt.journal.verify()
    return report.intact, report.reason


def test_an_edited_run_state_row_breaks_verify(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_demo(home)
    assert _verify(home) == (True, None)
    _edit_row(home, "UPDATE run_state SET last_status = 'executed', open_tasks = 0 "
                    "WHERE open_tasks > 0")
    intact, reason = _verify(home)
    assert not intact and "`run_state`" in str(reason), reason


def test_an_older_journal_gets_its_run_state_from_the_events(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_demo(home)
    with Runtime(home, graph_sync=False) as rt:
        counts = state_counts(rt.journal)
    url = os.environ.get(JOURNAL_URL_ENV)
    if url:  # a database at migration 1: migration 2 derives the rows
        with psycopg.connect(url) as conn:
            conn.execute("DROP TABLE run_state")
            conn.execute("DELETE FROM schema_migrations WHERE version = 2")
        migrate(url)
    else:  # a format 3 file: opening it upgrades it in place
        path = home / "journal.sqlite"
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("DROP TABLE run_state")
        conn.execute("PRAGMA user_version = 3")
        conn.close()
        with SqliteJournal(path):
            pass
        assert verify_journal(path).intact
    with Runtime(home, graph_sync=False) as rt:
        assert state_counts(rt.journal) == counts and counts["escalated"] == 1
    assert _verify(home) == (True, None)
