"""A run whose id holds ``/`` is shown by the JSON API and the web page like any other.

Finding (the fourth attack review): a run id is the agent's to choose (a proposal's
``run_id``, an MCP call's ``cradle-kg/run``) and may hold ``/`` (``team/refunds``). The
page lists it (``GET /api/runs``) and opens a run with ``GET /api/runs/{run}/view``, the
id percent-encoded (``team%2Frefunds``) — but the server decodes the path before routing,
and ``{run_id}`` matches no ``/``: the run view and ``GET /api/runs/{run}`` answered 404
"Not Found" for such a run, whatever the token. An agent whose runs were named so kept
what it did there (its lanes: tools, targets, decisions, outcomes) off the approvers'
page — listed, never openable — while the same run under any other name was shown.

Now both routes take the run id as a path (``{run_id:path}``), the view route first: a
run named ``team/refunds`` is shown at ``/api/runs/team%2Frefunds`` and
``…/team%2Frefunds/view``, every other run as before. (A run id ending in ``/view``
reads, at ``/api/runs/{run}``, as that run's parent's view; its own view route shows it.)
A real ``cradle-kg serve``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from tests import oneshot

from ..server.conftest import Server, start_server, stop_server
from .mcp_http import token_for, two_agent_home

HIDDEN = "team/refunds"
BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


def _credit(pid: str, run: str) -> dict[str, Any]:
    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-1",
                       "arguments": {"account": "acct-1", "amount": 5}}}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    home = two_agent_home(tmp_path_factory.mktemp("slash") / "home")
    with Runtime(home) as rt:
        for pid, run in (("p-1", HIDDEN), ("p-2", "plain")):
            assert rt.submit(_credit(pid, run)).status.value == "executed"
    agent = token_for(home, AGENT)
    srv = start_server(["--home", str(home)], home.parent / "server.log", home)
    try:
        yield srv, agent
    finally:
        stop_server(srv)


def _get(srv: Server, path: str, headers: dict[str, str] = BOB) -> httpx.Response:
    return oneshot.get(srv.url + path, headers=headers, timeout=60)


def test_the_page_lists_and_opens_a_run_with_a_slash(served: tuple[Server, str]) -> None:
    srv, agent = served
    listed = [r["run_id"] for r in _get(srv, "/api/runs").json()]
    assert HIDDEN in listed and "plain" in listed
    for headers in (BOB, {"Authorization": f"Bearer {agent}"}):
        # what the page asks (people.js: encodeURIComponent(runId)); before: 404
        view = _get(srv, f"/api/runs/{quote(HIDDEN, safe='')}/view", headers)
        assert view.status_code == 200, (view.status_code, view.text[:200])
        assert view.json()["run_id"] == HIDDEN
        assert [ln["tool"] for ln in view.json()["lanes"]] == ["demo.ledger.credit"]
        one = _get(srv, f"/api/runs/{quote(HIDDEN, safe='')}", headers)
        assert one.status_code == 200, (one.status_code, one.text[:200])
        assert one.json()["run_id"] == HIDDEN and one.json()["events"]


def test_every_other_run_reads_as_before(served: tuple[Server, str]) -> None:
    srv, _ = served
    view = _get(srv, "/api/runs/plain/view")
    assert view.status_code == 200 and view.json()["run_id"] == "plain"
    assert view.json()["lanes"][0]["proposal_id"] == "p-2"
    one = _get(srv, "/api/runs/plain")
    assert one.status_code == 200 and one.json()["run_id"] == "plain"
    assert _get(srv, "/api/runs/nobody/view").status_code == 404
    assert _get(srv, "/api/runs/nobody").status_code == 404
    assert _get(srv, f"/api/runs/{quote(HIDDEN, safe='')}/view",
                headers={}).status_code == 401
    assert "Traceback" not in Path(srv.log).read_text(errors="replace")
