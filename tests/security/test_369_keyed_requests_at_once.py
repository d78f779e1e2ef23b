"""Calls of one idempotency key at once ask the approvers once.

Finding (twenty-second review): ``test_236`` made a proposal under its agent's key read
the approval the key's first proposal waits for, instead of asking again — but it looked
for that approval before it wrote its own request, with nothing under the journal's
writer's lock to say none had been written since. An MCP client's calls run 8 at once
(``test_270``): ``agent:mallory`` sent 30 ``close_account`` calls under one key at once,
and the approvers' inbox held three identical requests for the one effect (in-process,
eight threads at once: 7 rounds of 20 asked more than once, up to six times). Approved
twice by a person who took them for two, the second's action was the key's, replayed,
and its approval stayed approved and unused (``test_368``).

What must hold: a request under an agent's key is written only if no event about the
action came since the key was looked for (``if_last``, checked by the journal under its
writer's lock); otherwise nothing of it is written and it is decided again, and then reads
the request that came first. One ``approval.requested`` per key, however many call at once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.records import Outcome

ROUNDS = 40
AT_ONCE = 8


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    prepare_home(tmp_path / "home")
    with Runtime(tmp_path / "home") as runtime:
        yield runtime


def _close(r: int, i: int) -> dict[str, object]:
    return {"id": f"p{r}-{i}", "task_id": "t", "run_id": "run:keyed", "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.close_account", "target": "ledger:acct-2",
                       "arguments": {"account": "acct-2"}, "idempotency_key": f"k{r}"}}


def test_one_key_s_calls_at_once_ask_once(rt: Runtime) -> None:
    asked: list[int] = []
    for r in range(ROUNDS):
        start = threading.Barrier(AT_ONCE)
        outcomes: list[Outcome] = []

        def call(i: int, r: int = r, start: threading.Barrier = start,
                 outcomes: list[Outcome] = outcomes) -> None:
            start.wait()
            outcomes.append(rt.submit(_close(r, i)))

        callers = [threading.Thread(target=call, args=(i,)) for i in range(AT_ONCE)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
        assert len(outcomes) == AT_ONCE
        assert {str(o.status) for o in outcomes} == {"awaiting_approval"}, outcomes
        asked.append(len({o.approval.id for o in outcomes if o.approval is not None}))
    # before: some rounds asked two to five times
    assert asked == [1] * ROUNDS, asked
    requests = [e for e in rt.journal.events() if e.kind == "approval.requested"]
    assert len(requests) == ROUNDS
