"""An agent whose id extends another's cannot take that agent's derived runs.

Attack: run namespaces (``test_235``) are ``run:<agent id>/…`` and the longest matching
agent id owns a run. Agent ids may hold ``/``: with ``agent:a`` and ``agent:a/lg-t`` both
configured, the run derived for ``agent:a``'s graph thread ``t/1`` (session ``lg-t/1``) was
``run:agent:a/lg-t/1`` — in ``agent:a/lg-t``'s namespace. A thread id is the client's word
(on LangGraph Server, ``configurable``): ``agent:a/lg-t`` claimed the run first and spoke
in it, and ``agent:a``'s own thread was refused in its own derived run, squatted or not.

What must hold: the run derived for an agent's session is in that agent's namespace alone,
whatever the session's name holds (a ``/`` in it is escaped): the victim's thread runs,
and the other agent's claim or proposal there is one :class:`RunOwnershipError`, nothing
journaled.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import RunOwnershipError
from cradle_kg.integrations.calls import GovernedSession
from cradle_kg.loop.proposal import run_namespace_owner

from .mcp_http import AGENT, declare_agent, fresh

#: an agent whose id is AGENT's followed by `/lg-t`
NESTED = f"{AGENT}/lg-t"


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    home = fresh(tmp_path, "home")
    declare_agent(home, NESTED)
    with Runtime(home) as runtime:
        yield runtime


def test_a_thread_named_like_the_nested_namespace_stays_its_agents(rt: Runtime) -> None:
    victim = GovernedSession(rt, AGENT, session_id="lg-t/1")  # LangGraph: thread `t/1`
    assert run_namespace_owner(victim.run_id) == AGENT
    head = rt.journal.head()
    with pytest.raises(RunOwnershipError):  # before: the nested agent's claim was taken
        rt.claim_run(victim.run_id, NESTED)
    assert rt.journal.head() == head
    done = victim.call("demo.ledger.credit", {"account": "acct-1", "amount": 5})
    assert done.status == "executed", done.text  # before: refused in its own run
    # the nested agent keeps its own namespace
    own = GovernedSession(rt, NESTED, session_id="1")
    assert run_namespace_owner(own.run_id) == NESTED
    assert own.call("demo.ledger.credit", {"account": "acct-1", "amount": 5}).status \
        == "executed"
