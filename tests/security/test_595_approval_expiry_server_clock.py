"""Finding: an approval's expiry (``--until``) was compared with the clock of the worker
that read it. Two workers on one PostgreSQL journal, one on a host whose clock was an hour
behind: an approval approved until a time already past on the journal server's clock (and
on every right clock) still covered its action there — the approve-once closure ran under
it, an hour after it expired. The same worker also accepted an approval's decision with an
``until`` already past (it was in its future), which then covered the action there.

Now: on PostgreSQL an approval's expiry is also read on the journal server's clock (one
``clock_timestamp()`` read, :meth:`~cradle_kg.storage.Journal.server_time`, only when an
approval with an expiry is considered): it covers an action only while it is unexpired on
both the worker's clock and the server's (fail closed: a worker ahead refuses it earlier,
as before). The intent that uses it carries the expiry in its approval guard, and the
journal checks it again on the server's clock under the append lock, in the append's own
transaction (the approval expiring meanwhile: nothing written, decided again, a person
asked anew). A decision whose ``until`` is already past on the server's clock is refused.
Every event keeps its ``at`` (the worker's clock). SQLite is one host's file: unchanged.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.records import ApprovalStatus
from cradle_kg.storage import JOURNAL_URL_ENV, ApprovalGuard, NewEvent, open_home_journal

from .mcp_http import two_agent_home
from .test_236_pending_key_asks_once import _close
from .test_284_approved_key_other_arguments import _intents


def _behind() -> datetime:
    """The clock of a host an hour behind."""
    return datetime.now(UTC) - timedelta(hours=1)


def _server_now(pg_url: str) -> datetime:
    """The journal server's clock now."""
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute("SELECT clock_timestamp()").fetchone()
    assert row is not None
    return row[0].astimezone(UTC)


@pytest.fixture
def pg_home(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(JOURNAL_URL_ENV, pg_url)
    return two_agent_home(tmp_path / "home")


def test_an_approval_expired_on_the_server_covers_nothing_on_a_worker_behind(
        pg_home: Path, pg_url: str) -> None:
    with Runtime(pg_home, graph_sync=False) as right, \
            Runtime(pg_home, graph_sync=False, clock=_behind) as behind:
        first = right.submit(_close("p1"))
        assert first.approval is not None
        # approved until two seconds from now on the server's clock: not yet past
        until = _server_now(pg_url) + timedelta(seconds=2)
        right.decide_approval(first.approval.id, approver_id=APPROVER,
                              token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                              until=until, resume=False)
        while _server_now(pg_url) <= until:  # its expiry passes (on every right clock)
            time.sleep(0.2)
        # the agent sends its proposal again, to the worker whose clock is behind
        again = behind.submit(_close("p1"))
        assert str(again.status) != "executed", again
        assert _intents(behind) == []
        # the worker on the right clock agrees
        assert str(right.submit(_close("p1")).status) != "executed"
    with open_home_journal(pg_home) as journal:
        assert journal.verify().intact


def test_a_decision_already_past_on_the_server_is_refused(pg_home: Path) -> None:
    with Runtime(pg_home, graph_sync=False, clock=_behind) as behind:
        first = behind.submit(_close("p1"))
        assert first.approval is not None
        # "until half an hour from now" on the behind host: half an hour ago on the server
        until = datetime.now(UTC) - timedelta(minutes=30)
        with pytest.raises(ApprovalError, match="already past"):
            behind.decide_approval(first.approval.id, approver_id=APPROVER,
                                   token=DEMO_TOKENS[APPROVER],
                                   status=ApprovalStatus.APPROVED, once=False, until=until)
        assert str(behind.submit(_close("p1")).status) != "executed"
        assert _intents(behind) == []


def test_the_append_refuses_a_use_past_its_expiry(pg_home: Path, pg_url: str) -> None:
    """Under the append lock: an intent whose approval guard says it expires at a time the
    server's clock has passed is not written (whatever the worker read before)."""
    with Runtime(pg_home, graph_sync=False) as rt:
        past = _server_now(pg_url) - timedelta(seconds=1)
        event = NewEvent(run_id="run:x", kind="note", subject="s", actor="agent:x",
                         at=_behind(), payload={},
                         approval_guard=ApprovalGuard("apr-x", "run:x", expires_at=past))
        head = rt.journal.head()
        with pytest.raises(Exception, match="apr-x") as refused:
            rt.journal.append([event])
        assert type(refused.value).__name__ == "ApprovalMoved"
        assert rt.journal.head() == head  # nothing written
        # the same guard before its expiry: written
        later = replace_expiry(event, _server_now(pg_url) + timedelta(hours=1))
        assert rt.journal.append([later])


def replace_expiry(event: NewEvent, expires_at: datetime) -> NewEvent:
    from dataclasses import replace
    assert event.approval_guard is not None
    return replace(event, approval_guard=replace(event.approval_guard, expires_at=expires_at))
