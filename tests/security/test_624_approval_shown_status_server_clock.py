"""Finding (left open by ``test_595``): on PostgreSQL an approval's expiry decides on the
journal server's clock too, but what was *shown* of it — ``approvals list`` and ``approvals
show``, ``GET /api/approvals`` and ``GET /api/approvals/{id}`` (what the web page reads) —
was read on the worker's clock alone. A worker an hour behind showed ``approved`` an
approval whose expiry had passed on the server (and on every right clock), an approval that
covered nothing there any more: a person reading it was told the action could still run.

Now each view reads the status as the decision does (``approvals.shown_now``: the later of
the worker's clock and the server's, :func:`~cradle_kg.loop.approvals.latest_now`), with at
most one server-time read per listing or view — and none when nothing it shows has an
expiry. SQLite is one host's file: unchanged.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus
from tests.inprocess import run_cli

from .homes import json_api
from .test_236_pending_key_asks_once import _close
from .test_595_approval_expiry_server_clock import _behind, _server_now, pg_home

__all__ = ["pg_home"]  # the fixture, used by name

AUTH = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


def _expired_on_the_server(rt: Runtime, pg_url: str, pids: tuple[str, ...]) -> list[str]:
    """Approvals approved until two seconds from now on the server's clock, then waited
    out there (on every right clock)."""
    until = _server_now(pg_url) + timedelta(seconds=2)
    ids = []
    for n, pid in enumerate(pids):
        asked = rt.submit(_close(pid, account=f"acct-{n}", key=f"close-{n}")).approval
        assert asked is not None
        rt.decide_approval(asked.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                           status=ApprovalStatus.APPROVED, until=until, resume=False)
        ids.append(asked.id)
    while _server_now(pg_url) <= until:
        time.sleep(0.2)
    return ids


@pytest.fixture
def server_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many times the journal server's clock was read (each call appends one)."""
    from cradle_kg.storage.postgresql import PostgresJournal

    reads: list[int] = []
    real = PostgresJournal.server_time

    def counted(self: Any) -> datetime | None:
        reads.append(1)
        return real(self)

    monkeypatch.setattr(PostgresJournal, "server_time", counted)
    yield reads


def test_the_api_shows_expired_on_a_worker_behind(pg_home: Path, pg_url: str,
                                                 server_reads: list[int]) -> None:
    with Runtime(pg_home, graph_sync=False) as right:
        ids = _expired_on_the_server(right, pg_url, ("p1", "p2", "p3"))
    with Runtime(pg_home, graph_sync=False, clock=_behind) as behind, \
            json_api(behind) as client:
        server_reads.clear()
        page = client.get("/api/approvals", headers=AUTH).json()
        # before: ['approved', 'approved', 'approved'] on the worker an hour behind
        assert [a["status"] for a in page] == ["expired"] * 3, page
        assert len(server_reads) <= 1  # one read for the page, not one per approval
        one = client.get(f"/api/approvals/{ids[0]}", headers=AUTH).json()
        assert one["approval"]["status"] == "expired", one


def test_the_cli_shows_expired_on_a_worker_behind(pg_home: Path, pg_url: str,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 server_reads: list[int]) -> None:
    with Runtime(pg_home, graph_sync=False) as right:
        ids = _expired_on_the_server(right, pg_url, ("p1", "p2"))
    from cradle_kg.cli import core

    opened = core.home_runtime

    def behind_runtime(*args: Any, **kw: Any) -> Runtime:
        rt = opened(*args, **kw)
        rt.clock = _behind  # the CLI on a host an hour behind
        return rt

    monkeypatch.setattr(core, "home_runtime", behind_runtime)
    server_reads.clear()
    listed = run_cli("approvals", "list", "--format", "json", "--home", str(pg_home))
    assert listed.returncode == 0, listed.stderr
    assert [a["status"] for a in json.loads(listed.stdout)] == ["expired"] * 2, listed.stdout
    assert len(server_reads) <= 1
    shown = run_cli("approvals", "show", ids[1], "--home", str(pg_home))
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["approval"]["status"] == "expired", shown.stdout


def test_an_unexpired_approval_is_shown_approved_with_no_extra_read(
        pg_home: Path, server_reads: list[int]) -> None:
    """The worker behind still shows ``approved`` what is unexpired on the server, and a
    listing with no expiry in it does not read the server's clock."""
    with Runtime(pg_home, graph_sync=False, clock=_behind) as behind, \
            json_api(behind) as client:
        asked = behind.submit(_close("p1")).approval
        assert asked is not None
        behind.decide_approval(asked.id, approver_id=APPROVER, token=DEMO_TOKENS[APPROVER],
                               status=ApprovalStatus.APPROVED, resume=False)
        server_reads.clear()
        page = client.get("/api/approvals", headers=AUTH).json()
        assert [a["status"] for a in page] == ["approved"], page
        assert server_reads == []
