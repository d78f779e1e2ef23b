"""A page of runs past what the journal's integers hold is a typed refusal.

Finding: ``GET /api/runs`` takes ``limit`` (1 to 1,000) and ``offset`` (at least 0, with
no upper bound), and ``cradle-kg runs list`` ``--limit`` and ``--offset`` (no upper bound
either); both reach the journal's ``LIMIT ? OFFSET ?``. Any token holder asking for
``/api/runs?offset=99999999999999999999`` (a number past 64 bits) got an HTTP 500 and put
a traceback in the server's log: SQLite's driver raises ``OverflowError`` ("Python int
too large to convert to SQLite INTEGER"), which is no ``sqlite3.Error``, so it escaped
the journal's typed errors; ``runs list --offset`` (or ``--limit``) of the same ended
``error: unexpected OverflowError``. On PostgreSQL the same request was a 400 blaming the
journal (``journal_error``: "cannot read the journal `postgresql://…`: bigint out of
range"), not the parameter.

Now a page's ``limit`` and ``offset`` are checked where every caller meets them
(:func:`cradle_kg.runs.list_page`): past ``2**63 - 1`` (what SQLite's and PostgreSQL's
integers hold) an ``InputError`` naming the parameter — 422 over HTTP (the API also
declares the bound), one ``error:`` line and exit 2 on the command line. The largest
offset that fits is answered with an empty page, as before.

A real ``cradle-kg serve`` and the real command line, on both journals.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError
from cradle_kg.runs import list_page
from tests import oneshot

from ..inprocess import run_cli
from ..server.conftest import start_server, stop_server
from .mcp_http import two_agent_home, waiting_close

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

HUGE = "99999999999999999999"
FITS = str(2**63 - 1)


def test_the_api_refuses_a_page_past_64_bits(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    waiting_close(home)
    log = tmp_path / "server.log"
    srv = start_server(["--home", str(home)], log, home)
    headers = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
    try:
        for query in (f"offset={HUGE}", f"offset={2**63}", f"status=open&offset={HUGE}"):
            r = oneshot.get(f"{srv.url}/api/runs?{query}", headers=headers, timeout=60)
            assert r.status_code == 422, (query, r.status_code, r.text[:200])  # before: 500
            assert "offset" in r.text
        fits = oneshot.get(f"{srv.url}/api/runs?offset={FITS}", headers=headers, timeout=60)
        assert fits.status_code == 200 and fits.json() == []
        first = oneshot.get(f"{srv.url}/api/runs", headers=headers, timeout=60)
        assert [r["run_id"] for r in first.json()] == ["run:alice"]
    finally:
        stop_server(srv)
    assert "Traceback" not in log.read_text(errors="replace")


@pytest.mark.parametrize("option", ["--offset", "--limit"])
def test_the_cli_refuses_it_in_one_line(tmp_path: Path, option: str) -> None:
    home = two_agent_home(tmp_path / "home")
    waiting_close(home)
    done = run_cli("runs", "list", "--home", str(home), option, HUGE)
    assert done.returncode == 2, (done.stdout, done.stderr)
    # before: `error: unexpected OverflowError: Python int too large to convert to SQLite
    # INTEGER`
    assert done.stderr.startswith(f"error: `{option[2:]}`"), done.stderr
    assert "unexpected" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert run_cli("runs", "list", "--home", str(home), "--offset", FITS).returncode == 0


def test_python_callers_get_the_typed_error(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    waiting_close(home)
    with Runtime(home, graph_sync=False) as rt:
        for kw in ({"offset": 2**64}, {"offset": -1}, {"limit": 2**63, "offset": 0}):
            with pytest.raises(InputError):
                list_page(rt.journal, limit=kw.get("limit", 10), offset=kw["offset"])
        assert list_page(rt.journal, limit=None, offset=0)[1] == 1
