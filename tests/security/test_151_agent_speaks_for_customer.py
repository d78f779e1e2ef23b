"""An agent cannot state a fact as the person it acts for.

Finding (tenth attack review): ``travel.airline`` takes a customer statement — "yes, cancel
it", the cancellation's reason, a complaint asking for compensation — from a fact whose
subject is the customer the call is made for (``on_behalf_of``) and whose ``source`` is
that customer, or the host relaying their words (``host:``). ``test_59`` keeps an agent's
token from writing a ``host:`` fact on ``POST /api/proposals``, but the JSON API takes the
whole proposal from the agent, sources included: an agent wrote ``"source":
"customer:olivia_gonzalez_2305"`` on ``airline:cancellationReason = health`` and the
customer's insured reservation ``Z7GOZK`` was cancelled unattended, although the customer
had said nothing (the same fact under the agent's own source asks the customer:
``needs_clarification``). The pack's own words: "the same statement from any other source
— the agent included — is ignored".

Now the JSON API refuses from an agent's token a fact whose ``source`` is the principal
the proposal acts for, as it refuses a host's: a 403 naming the fact, nothing journaled.
The host's own paths (MCP and LangGraph ``cradle-kg/facts``, ``Runtime.submit``, the CLI)
are unchanged.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg import Runtime
from cradle_kg.server.api import make_router
from tests.packs.test_pack_init import _data, invoke

from .mcp_http import token_for

AGENT = "agent:airline-assistant"
CUSTOMER = "customer:olivia_gonzalez_2305"


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
           ) -> Iterator[tuple[Runtime, TestClient, str]]:
    monkeypatch.delenv("CRADLE_JOURNAL_URL", raising=False)
    monkeypatch.delenv("CRADLE_GRAPH_URL", raising=False)
    home = tmp_path / "home"
    code, out = invoke("pack", "init", "travel.airline", "--data", str(_data()),
                       "--home", str(home))
    assert code == 0, out
    token = token_for(home, AGENT)
    with Runtime(home, graph_sync=False) as rt:
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            yield rt, client, token


def _cancel(pid: str, source: str) -> dict[str, Any]:
    return {"id": pid, "task_id": "task-cancel", "agent_id": AGENT, "run_id": f"run:{pid}",
            "on_behalf_of": CUSTOMER,
            "facts": [{"subject": CUSTOMER, "predicate": "airline:cancellationReason",
                       "object": "health", "source": source}],
            "action": {"action_type": "airline.cancel_reservation",
                       "target": "reservation:Z7GOZK",
                       "arguments": {"reservation_id": "Z7GOZK"}}}


def _status(rt: Runtime) -> Any:
    with sqlite3.connect(rt.home.root / "travel-airline" / "airline.sqlite") as conn:
        return conn.execute("SELECT status FROM reservations WHERE reservation_id = "
                            "'Z7GOZK'").fetchone()[0]


def test_an_agent_cannot_state_the_customers_reason(
        served: tuple[Runtime, TestClient, str]) -> None:
    rt, client, token = served
    auth = {"Authorization": f"Bearer {token}"}
    # the agent's own claim is hearsay: the customer is asked (as before)
    own = client.post("/api/proposals", json=_cancel("p-own", AGENT), headers=auth)
    assert own.status_code == 200, own.text
    assert own.json()["status"] == "needs_clarification", own.json()
    # the same claim written as the customer's word: before, executed unattended
    forged = client.post("/api/proposals", json=_cancel("p-forged", CUSTOMER), headers=auth)
    assert forged.status_code == 403, forged.text
    message = forged.json()["detail"]["message"]
    assert "facts[0].source" in message and CUSTOMER in message, message
    assert _status(rt) is None  # not cancelled
    assert not list(rt.journal.events(run_id="run:p-forged"))  # nothing journaled
