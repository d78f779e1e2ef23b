"""Evidence uploads count against a per-identity quota over the last hour.

Finding: ``POST /api/evidence`` stored a blob of up to 1 MiB and journaled an
``evidence.collected`` event for any token holder, with no limit on how often: one agent's
token, one client, filled the disk at 63 uploads and 66 MB a second (668 MB in 10 s on
this machine) and the journal at up to 127 events a second with small bodies. Now the
blobs an identity added in the last hour are counted from the journal — so every server
process and the CLI share the count — against ``input_limits.evidence_uploads_per_hour``
(1,000 by default) and ``evidence_bytes_per_hour`` (256 MiB); past either, HTTP 429 with
a typed error whose hint names the key and when the window frees up, ``Retry-After`` in
seconds, and nothing written: no blob, no event. ``cradle-kg evidence add --as X`` obeys
the same quota of X.

A real ``cradle-kg serve`` on 127.0.0.1 and agents' tokens.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.canonical import sha256_bytes
from cradle_kg.config import load_config, save_config
from cradle_kg.evidence import added_event
from tests import oneshot

from ..inprocess import run_cli
from ..server.conftest import start_server, stop_server
from .mcp_http import AGENT, MALLORY, token_for, two_agent_home
from .server_times import age_server_times


def _journaled(home: Path) -> tuple[int, int]:
    """(events in the journal, blob files in the evidence store) — the quota's one record
    of the hour aside (``quota.reached``: ``tests/security/test_217``)."""
    with Runtime(home) as rt:
        events = sum(1 for e in rt.journal.events() if e.kind != "quota.reached")
    return events, sum(1 for p in (home / "evidence").rglob("*") if p.is_file())


def _post(url: str, token: str, body: bytes) -> httpx.Response:
    return oneshot.post(f"{url}/api/evidence", content=body, timeout=60,
                      headers={"Authorization": f"Bearer {token}"})


def _refused(answer: httpx.Response, key: str) -> dict[str, str]:
    assert answer.status_code == 429, (answer.status_code, answer.text)
    detail: dict[str, str] = answer.json()["detail"]
    assert detail["error"] == "quota_exceeded", detail
    assert f"input_limits.{key}" in detail["hint"], detail
    return detail


def test_the_default_quota_refuses_the_1001st_upload_of_the_hour(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    agent, other = token_for(home, AGENT), token_for(home, MALLORY)
    with Runtime(home) as rt:  # 999 uploads in the last hour, 300 more before it
        now = rt.clock()
        rt.context.append(
            [added_event(sha256_bytes(b"old %d" % i), size=10, kind="document", source=None,
                         by=AGENT, role="agent", at=now - timedelta(minutes=61 + i % 30))
             for i in range(300)]
            + [added_event(sha256_bytes(b"recent %d" % i), size=10, kind="document",
                           source=None, by=AGENT, role="agent",
                           at=now - timedelta(minutes=50) + i * timedelta(
                               milliseconds=1)) for i in range(999)])
        # on PostgreSQL the quota reads the server's second of each upload's append:
        # as if each had been appended when it is dated (tests/security/test_607)
        age_server_times(rt)
    srv = start_server(["--home", str(home)], tmp_path / "serve.log", home)
    try:
        assert _post(srv.url, agent, b"the thousandth").status_code == 200
        before = _journaled(home)
        body = os.urandom(1000)
        refused = _post(srv.url, agent, body)
        detail = _refused(refused, "evidence_uploads_per_hour")
        assert f"`{AGENT}` added 1000 evidence blobs in the last hour" in detail["message"]
        # the oldest of the hour's 1,000 leaves the window in ~10 minutes
        assert 540 <= int(refused.headers["Retry-After"]) <= 601, refused.headers
        assert "frees up at" in detail["hint"]
        assert _journaled(home) == before  # no event, no blob
        with Runtime(home) as rt:
            assert not rt.evidence.exists(sha256_bytes(body))
        # per identity: another agent's uploads are its own
        assert _post(srv.url, other, b"mallory's first").status_code == 200
    finally:
        stop_server(srv)
    assert "Traceback" not in (tmp_path / "serve.log").read_text(errors="replace")


@pytest.mark.slow
def test_the_count_is_the_journals_shared_by_the_cli_and_bytes_count_too(
        tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update={
            "evidence_uploads_per_hour": 3, "evidence_bytes_per_hour": 10_000})}))
    agent, other = token_for(home, AGENT), token_for(home, MALLORY)
    for n in range(2):  # another process than the server's, the same journal
        (tmp_path / f"doc{n}").write_bytes(b"cli document %d" % n)
        added = run_cli("evidence", "add", str(tmp_path / f"doc{n}"), "--as", AGENT,
                        "--home", str(home))
        assert added.returncode == 0, added.stderr
    srv = start_server(["--home", str(home)], tmp_path / "serve.log", home)
    try:
        assert _post(srv.url, agent, b"third of three").status_code == 200
        before = _journaled(home)
        _refused(_post(srv.url, agent, b"a fourth"), "evidence_uploads_per_hour")
        (tmp_path / "doc9").write_bytes(b"cli, a fourth")
        cli = run_cli("evidence", "add", str(tmp_path / "doc9"), "--as", AGENT,
                      "--home", str(home))
        assert cli.returncode == 2 and "evidence_uploads_per_hour" in cli.stderr, cli.stderr
        assert "Traceback" not in cli.stderr
        assert _journaled(home) == before
        # bytes: 6,000 + 5,000 is past 10,000 (429 until the 6,000 leave the window),
        # 6,000 + 4,000 is not; a blob past the hourly bytes alone never fits
        assert _post(srv.url, other, os.urandom(6000)).status_code == 200
        over = _post(srv.url, other, os.urandom(5000))
        assert "11000 bytes in the last hour" in _refused(over, "evidence_bytes_per_hour")[
            "message"]
        assert 3590 <= int(over.headers["Retry-After"]) <= 3600
        assert _post(srv.url, other, os.urandom(4000)).status_code == 200
        never = _post(srv.url, other, os.urandom(20_000))
        assert "more than the limit" in _refused(never, "evidence_bytes_per_hour")["message"]
        assert "Retry-After" not in never.headers
    finally:
        stop_server(srv)
    assert "Traceback" not in (tmp_path / "serve.log").read_text(errors="replace")
