"""A run id the loader refuses is never read from the journal.

Finding (the lead's review of the twenty-fourth round, by the PostgreSQL suite): since
``test_462`` a session's first call into a run reads the run's highest step
(``Journal.max_step``, ``GovernedSession.count_in``) — before the proposal carrying that run
id was loaded. A ``cradle-kg/run`` holding a NUL (``run:a\\x00b``) reached PostgreSQL, which
refuses NUL in text: the MCP call ended in a JSON-RPC error instead of its refusal
(``test_14``'s ``nul-run`` case failed on PostgreSQL only); LangGraph's ``call_step`` read a
proposal by an id from the thread the same way.

Now an id is read only once the loader would take it (``GovernedSession.readable``); the
call is refused as before, nothing journaled, on both journals.
"""

from __future__ import annotations

from collections import OrderedDict

import pytest

from cradle_kg import Runtime
from cradle_kg.integrations.calls import GovernedSession, HostMeta
from cradle_kg.integrations.langgraph import call_step

from .mcp_http import MALLORY, two_agent_fixtures

pytestmark = pytest.mark.usefixtures("journal_backend")

home, rt = two_agent_fixtures()

UNLOADABLE = ["run:a\x00b", "r" * 5000]


@pytest.mark.parametrize("run", UNLOADABLE, ids=["nul", "5000-chars"])
def test_a_session_refuses_the_run_without_reading_it(rt: Runtime, run: str) -> None:
    head = rt.journal.head()
    session = GovernedSession(rt, MALLORY)
    got = session.call("demo.ledger.credit", {"account": "acct-1", "amount": 1},
                       HostMeta(run=run))
    # before, on PostgreSQL: a psycopg error out of `count_in` (not a refusal)
    assert got.status == "refused", (got.status, got.text)
    assert rt.journal.head() == head  # nothing journaled


@pytest.mark.parametrize("run", UNLOADABLE, ids=["nul", "5000-chars"])
def test_a_langgraph_call_step_reads_no_unloadable_id(rt: Runtime, run: str) -> None:
    session = GovernedSession(rt, MALLORY)
    steps: OrderedDict[str, int] = OrderedDict()
    assert call_step(session, steps, "c1", f"{run}:p", run) == 1
