"""Finding: an agent's refusals quota of the hour (``refusals_per_agent_per_hour``) counted
its refused proposals in usage buckets keyed by each decision's ``at``, which each worker
dates by its host's clock. Two workers on one PostgreSQL journal, one two hours behind: at
a quota of one refusal an hour, an agent whose refused proposal went through the worker
behind (its decision dated two hours early) had its next refused proposal journaled whole
by the worker on the right clock seconds later — that worker's hour started after the
first refusal. Each worker whose clock differs by more than the hour adds a window's
worth.

Now: every event keeps its ``at``. On PostgreSQL a refused proposal's decision is counted
a second time, in the server scope ``server:refusals.agent``, in the second of the
server's clock in the transaction that appends it (its time recorded in
``server_times``, migration 20); the quota — the count before the proposal is evaluated and the cap
checked under the append lock — reads the hour up to the server's clock now there.
``audit verify`` derives those buckets again from the recorded seconds. SQLite is one
host's file: one clock, unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import QuotaExceededError
from cradle_kg.storage import JOURNAL_URL_ENV, open_home_journal

from .mcp_http import two_agent_home
from .test_204_refused_proposals_quota import _credit, _quota


def _behind() -> datetime:
    """The clock of a host two hours behind."""
    return datetime.now(UTC) - timedelta(hours=2)


@pytest.fixture
def pg_home(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(JOURNAL_URL_ENV, pg_url)
    return two_agent_home(tmp_path / "home")


def _refused(home: Path) -> list[str]:
    with open_home_journal(home) as journal:
        return [e.subject for e in journal.events_of_kind("proposal.received")]


def test_workers_with_clocks_apart_share_one_hour_of_refusals(pg_home: Path) -> None:
    _quota(pg_home, 1)
    with Runtime(pg_home, graph_sync=False, clock=_behind) as behind, \
            Runtime(pg_home, graph_sync=False) as right:
        assert behind.submit(_credit("a", 5000)).status == "denied"  # dated two hours early
        with pytest.raises(QuotaExceededError):  # seconds later, on the server's clock
            right.submit(_credit("b", 5000))
        with pytest.raises(QuotaExceededError):  # and the worker behind agrees
            behind.submit(_credit("c", 5000))
    assert _refused(pg_home) == ["a"]
    with open_home_journal(pg_home) as journal:
        assert journal.verify().intact


def test_the_refusal_seconds_are_read_again_by_verify(pg_home: Path, pg_url: str) -> None:
    """The server's time of a refusal is outside the chain (``server_times``): ``audit
    verify`` derives the server buckets from it again, so buckets that do not follow from
    the recorded times are reported."""
    import psycopg

    _quota(pg_home, 5)
    with Runtime(pg_home, graph_sync=False) as rt:
        assert rt.submit(_credit("a", 5000)).status == "denied"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM server_times WHERE kind = "
                            "'decision.made'").fetchone() == (1,)
        conn.execute("UPDATE server_times SET at = '2000-01-01T00:00:00.000000' "
                     "WHERE kind = 'decision.made'")
    with open_home_journal(pg_home) as journal:
        report = journal.verify()
    assert not report.intact and "usage" in str(report.reason), report.reason


def test_a_journal_at_migration_19_is_migrated_and_keeps_its_quotas(
        pg_home: Path, pg_url: str) -> None:
    """``db migrate`` completes migration 20 on a journal that has uploads and refusals:
    each at its own ``at``, the refusals' server buckets derived from them, and the quotas
    still count them."""
    import psycopg

    import cradle_kg.evidence as evidence
    from cradle_kg.config import load_config, save_config
    from cradle_kg.demo.scenario import AGENT
    from cradle_kg.errors import JournalError
    from cradle_kg.storage import open_journal
    from cradle_kg.storage.pg_admin import migrate

    _quota(pg_home, 1)
    config = load_config(pg_home / "config.json")
    save_config(pg_home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(
            update={"evidence_uploads_per_hour": 1})}))
    with Runtime(pg_home, graph_sync=False) as rt:
        assert rt.submit(_credit("a", 5000)).status == "denied"
        evidence.upload(rt.context, rt.evidence, b"one", kind="document", source=None,
                        by=AGENT)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as before migration 20
        conn.execute("DROP TABLE server_times")
        conn.execute("DELETE FROM usage WHERE scope = 'server:refusals.agent'")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 20")
    with pytest.raises(JournalError, match="schema version `19`"):
        open_journal(pg_url)
    assert migrate(pg_url) == [(20, "server-times")]
    with open_journal(pg_url) as journal:
        assert journal.verify().intact
    with Runtime(pg_home, graph_sync=False) as rt:
        with pytest.raises(QuotaExceededError):
            rt.submit(_credit("b", 5000))
        with pytest.raises(QuotaExceededError):
            evidence.upload(rt.context, rt.evidence, b"two", kind="document", source=None,
                            by=AGENT)
