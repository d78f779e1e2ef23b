"""Finding: an identity's evidence upload quotas of the hour (``evidence_uploads_per_hour``,
``evidence_bytes_per_hour``) counted its ``evidence.collected`` events by their ``at``,
which each worker dates by its host's clock. Two workers on one PostgreSQL journal, one an
hour behind: at a quota of one upload an hour, an agent uploading first through the worker
behind (its upload dated an hour early), then through the worker on the right clock, had
both accepted and journaled within seconds — the second worker's hour started after the
first's upload. The same with the bytes.

Now: every event keeps its ``at`` (the worker's clock: an evidence check compares it). On
PostgreSQL the server records each upload's time on its clock in the append's own
transaction (``server_times``, migration 20), and the quota — the count before the blob
is stored and the :class:`~cradle_kg.storage.UploadCap` checked under the append lock —
reads the hour up to the server's clock now at those times (and says when it frees up on
the runtime's clock: now less each upload's age on the server's). ``audit verify`` checks
every upload has its time; ``journal copy`` and the migration give the uploads they carry
their own ``at``. SQLite is one host's file: one clock, unchanged.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import cradle_kg.evidence as evidence
from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import QuotaExceededError
from cradle_kg.storage import JOURNAL_URL_ENV, open_home_journal

from .mcp_http import two_agent_home


def _behind() -> datetime:
    """The clock of a host an hour behind."""
    return datetime.now(UTC) - timedelta(hours=1)


def _upload(rt: Runtime, data: bytes) -> str:
    return evidence.upload(rt.context, rt.evidence, data, kind="document", source=None,
                           by=AGENT)


@pytest.fixture
def pg_home(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(JOURNAL_URL_ENV, pg_url)
    return two_agent_home(tmp_path / "home")


@pytest.mark.parametrize(("key", "limit", "sizes"),
                         [("evidence_uploads_per_hour", 1, (10, 10)),
                          ("evidence_bytes_per_hour", 1500, (1000, 1000))],
                         ids=["uploads", "bytes"])
def test_workers_with_clocks_apart_share_one_hour_of_uploads(
        pg_home: Path, key: str, limit: int, sizes: tuple[int, int]) -> None:
    config = load_config(pg_home / "config.json")
    save_config(pg_home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update={key: limit})}))
    with Runtime(pg_home, graph_sync=False, clock=_behind) as behind, \
            Runtime(pg_home, graph_sync=False) as right:
        first = _upload(behind, b"a" * sizes[0])  # dated an hour early
        with pytest.raises(QuotaExceededError) as refused:
            _upload(right, b"b" * sizes[1])  # seconds later, on the server's clock
        assert refused.value.quota == key
        # it frees up an hour after the first upload, said on each worker's clock
        assert 3590 <= refused.value.retry_after <= 3600, refused.value.retry_after
        # and the worker behind agrees, whichever upload it is asked for next
        with pytest.raises(QuotaExceededError) as again:
            _upload(behind, b"c" * sizes[1])
        assert 3590 <= again.value.retry_after <= 3600, again.value.retry_after
    with open_home_journal(pg_home) as journal:
        uploads = journal.events_of_kind(evidence.COLLECTED)
        assert [e.subject for e in uploads] == [first]
        # the upload keeps the worker's time
        assert round((uploads[0].at - datetime.now(UTC)).total_seconds() / 3600) == -1
        assert journal.verify().intact


def test_the_upload_seconds_are_read_again_by_verify(pg_home: Path, pg_url: str) -> None:
    """The server's times of the uploads are outside the chain (``server_times``):
    ``audit verify`` reads them again, so a row removed (the quota freed) is reported."""
    import psycopg

    with Runtime(pg_home, graph_sync=False) as rt:
        _upload(rt, b"one")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM server_times").fetchone() == (1,)
        conn.execute("DELETE FROM server_times")
    with open_home_journal(pg_home) as journal:
        report = journal.verify()
    assert not report.intact and "server_times" in str(report.reason), report.reason
