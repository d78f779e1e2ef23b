"""What the pending approvals' reads cost does not grow with another agent's requests, and
an agent's page of its approvals is a page of *its* approvals.

Finding (the fourth review's "noticed and left"): ``GET /api/approvals?pending=true`` (any
token, an agent's too), ``approvals list --pending``, ``GET /api/inbox`` (an agent's token
too), ``GET /api/overview`` and the run view's inbox (``GET /api/runs/{run}/view``, which the
page polls, for any run) all went through ``ApprovalBook.undecided_read``: every undecided
approval of the journal, each digest's every event in every run, decoded, *then* paged,
filtered by run and filtered by who may see it. An agent asks for as many approvals as it
likes (one action proposed again and again: ``test_87``), and every approver's poll, every
other agent's page and every other run's view paid for them. Measured: with 10 and 40 of
another agent's requests waiting, ``?pending=true&limit=1`` decoded 11 and 41 rows (for an
approver and for the other agent alike), the other agent's ``/api/inbox`` 22 and 82, the
view of a run with one approval 21 and 51; a page of 5 approvals (not only pending) 10 and
40 — ``ApprovalBook.page`` folded every approval its run asked for the same action.

And ``GET /api/approvals`` (not only pending) filtered what an agent may see *after* paging:
an agent whose one approval came after another agent's ten got ``[]`` for ``limit=5`` —
a page that said nothing was there.

Now the approvals are read as their requests, one page of ``approval_ids`` or of the derived
``undecided_approvals`` at a time, filtered in the query by run and by the agent that asked
(``Journal.approval_requests``): 1, 1, 2 and 11 rows at 10 and at 40 (the page of 5: 1, its
request and the decisions of its digest in its run); an agent's page of approvals (pending
or not) is a page of its own. Counted as the event rows decoded, on both journals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.integrations.calls import GovernedSession
from cradle_kg.server.api import make_router

from .mcp_http import MALLORY, token_for, two_agent_home
from .reads import rows_read

pytestmark = pytest.mark.usefixtures("journal_backend")

CLOSE = "demo.ledger.close_account"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Runtime, TestClient, dict[str, str]]]:
    home = two_agent_home(tmp_path / "home")
    tokens = {AGENT: token_for(home, AGENT), MALLORY: token_for(home, MALLORY),
              APPROVER: DEMO_TOKENS[APPROVER]}
    with Runtime(home, graph_sync=False) as rt:
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            yield rt, client, tokens


def _get(client: TestClient, token: str, path: str, **params: Any) -> Any:
    answer = client.get(path, params=params, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_pending_reads_do_not_grow_with_another_agents_requests(
        served: tuple[Runtime, TestClient, dict[str, str]],
        decoded: Callable[[], int]) -> None:
    rt, client, tokens = served
    mallory = GovernedSession(rt, MALLORY)
    for _ in range(10):  # another agent's requests, asked first
        assert mallory.call(CLOSE, {"account": "acct-2"}).status == "awaiting_approval"
    alice = GovernedSession(rt, AGENT)
    mine = alice.call(CLOSE, {"account": "acct-1"})
    assert mine.status == "awaiting_approval" and mine.approval_id and mine.outcome
    run = mine.outcome.run_id

    def reads() -> dict[str, int]:
        out = {}
        for name, token, path, params in (
                ("approver pending", tokens[APPROVER], "/api/approvals",
                 {"pending": "true", "limit": 1}),
                ("agent pending", tokens[AGENT], "/api/approvals", {"pending": "true"}),
                ("agent page", tokens[AGENT], "/api/approvals", {"limit": 5}),
                ("agent inbox", tokens[AGENT], "/api/inbox", {}),
                ("run view", tokens[APPROVER], f"/api/runs/{run}/view", {})):
            n, body = rows_read(decoded, lambda t=token, p=path, q=params:  # type: ignore[misc]
                                _get(client, t, p, **q))
            out[name] = n
            if name == "agent pending" or name == "agent inbox":
                assert [a["id"] for a in body] == [mine.approval_id], body
            if name == "agent page":  # before: [] — the page held the other agent's
                assert [a["id"] for a in body] == [mine.approval_id], body
            if name == "run view":
                assert [i["id"] for i in body["inbox"]] == [mine.approval_id]
        return out

    few = reads()
    for _ in range(30):
        assert mallory.call(CLOSE, {"account": "acct-2"}).status == "awaiting_approval"
    many = reads()
    # before: 11 → 41 rows for a pending page of one (approver or agent), 10 → 40 for the
    # agent's page of 5, 22 → 82 for its inbox, 21 → 51 for the run view
    assert many == few, (few, many)
    assert few["approver pending"] <= 2 and few["agent pending"] <= 2, few

    # the listings themselves are as before: in the order asked, every one once
    pending = _get(client, tokens[APPROVER], "/api/approvals", pending="true", limit=1000)
    assert len(pending) == 41 and pending[10]["id"] == mine.approval_id  # 10 asked before
    assert [a["id"] for a in _get(client, tokens[APPROVER], "/api/approvals", pending="true",
                                  limit=3, offset=9)] == [a["id"] for a in pending[9:12]]
    everything = _get(client, tokens[APPROVER], "/api/approvals", limit=1000)
    assert [a["id"] for a in everything] == [a["id"] for a in pending]
    theirs = _get(client, tokens[MALLORY], "/api/approvals", limit=1000)
    assert len(theirs) == 40 and mine.approval_id not in {a["id"] for a in theirs}
    assert [a["id"] for a in _get(client, tokens[MALLORY], "/api/approvals", pending="true",
                                  limit=2, offset=38)] == [a["id"] for a in theirs[38:]]
    inbox = _get(client, tokens[APPROVER], "/api/inbox", kind="approval")
    assert [i["id"] for i in inbox] == [a["id"] for a in pending]
    assert _get(client, tokens[AGENT], "/api/overview")["inbox"] == 1
