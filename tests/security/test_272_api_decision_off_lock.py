"""An approver's decision that runs a slow action holds no other identity of ``serve``.

Finding (after ``test_271``): ``POST /api/approvals/{id}/approve`` runs the approved action
and walks its workflow on, under the JSON API's one lock. An agent's action whose tool
answers late (here 30 s) held the lock for all of it once a person approved it: the other
agent's ``GET /api/runs``, every identity's submissions and reads, waited until the tool
had answered — an agent that asks for such actions has them hold the server each time one
is approved.

Now a decision runs outside the API's lock (the journal's decide-once guard holds it, as it
holds a decision of ``cradle-kg approvals approve`` in another process), on the approver's
own threads: the other agent is answered while the approved action runs.

``test_271``'s home and slow tool, which a policy of the home now has a person approve.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from tests.server.conftest import Server

from .mcp_http import MALLORY, token_for
from .test_271_api_calls_per_identity import WAYS, served_while_held, serving

ASKED = """
@id("slow-needs-a-person")
@requires_approval("true")
permit(principal, action, resource) when { context.tool == "test.slow.wait" };
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    with serving(tmp_path, {"policies/slow-approval.cedar": ASKED}) as srv:
        yield srv


def test_an_approved_slow_action_leaves_the_others_served(served: Server) -> None:
    assert served.home is not None
    path, body = WAYS["proposal"]
    asked = httpx.post(served.url + path, json=body(0), timeout=60,
                       headers={"Authorization": f"Bearer {token_for(served.home, MALLORY)}"})
    assert asked.json()["status"] == "awaiting_approval", asked.text
    approval = asked.json()["approval"]["id"]
    decided = served_while_held(served, f"/api/approvals/{approval}/approve",
                                ("/api/runs", "/api/approvals"), body={})
    assert decided.json()["outcome"]["status"] == "executed", decided.text


def test_an_approval_decided_twice_at_once_runs_its_action_once(served: Server) -> None:
    """Off the lock, two decisions of one approval in one process: the journal's guard
    takes the first, refuses the second, and the action runs once."""
    assert served.home is not None
    path, body = WAYS["proposal"]
    asked = httpx.post(served.url + path, json=body(1), timeout=60,
                       headers={"Authorization": f"Bearer {token_for(served.home, MALLORY)}"})
    approval = asked.json()["approval"]["id"]
    together = threading.Barrier(2)
    decided: list[httpx.Response] = []

    def approve() -> None:
        together.wait()
        decided.append(httpx.post(
            f"{served.url}/api/approvals/{approval}/approve", json={}, timeout=120,
            headers={"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}))

    approvers = [threading.Thread(target=approve, daemon=True) for _ in range(2)]
    for each in approvers:
        each.start()
    time.sleep(3)
    (served.home / "slow-release").touch()
    for each in approvers:
        each.join(60)
    assert sorted(r.status_code for r in decided) == [200, 403], [r.text for r in decided]
    with Runtime(served.home) as rt:
        ran = [e for e in rt.journal.events() if e.kind == "action.observed"]
    assert len(ran) == 1, ran
