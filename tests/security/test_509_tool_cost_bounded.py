"""Finding: a tool's contract declared its ``cost`` (``ToolSpec.cost``: what a cost limit
and each intent's usage buckets count) as any value at all — a pack's ``@tool(cost=…)``, a
host's ``register_tool``. A negative cost gave spend back: beside one call of a tool
costing -1, a cost-1 tool ran three times under a task's cost limit of 2. ``nan`` failed
every call of the tool with a ``ValueError`` traceback out of ``submit`` (the intent's
JSON). ``1e308`` took the usage buckets' sums past the largest float: two calls, and the
task's spend read ``inf`` on SQLite; on PostgreSQL the second call's intent failed to
append (``JournalError``: "value out of range: overflow"). A workflow's model call had the
same hole closed (``tests/security/test_407``); a tool's cost was left.

Now: a tool whose cost is not a number (not a boolean), finite, from 0 to
``MAX_CALL_COST`` (10⁹) is refused when it is registered — ``InputError``, its contract
incomplete, the reason said — by the same rule as a model call's (``tools.cost_problem``);
nothing is served.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.config import Limit
from cradle_kg.errors import InputError
from cradle_kg.records import IdempotencyClass, SideEffectClass
from cradle_kg.tools import ToolCall, ToolSpec
from tests.conftest import Echo, EchoOut, make_config, proposal

pytestmark = pytest.mark.usefixtures("journal_backend")


def _spec(cost: Any) -> ToolSpec:
    return ToolSpec(id="test.priced", version="1", input_model=Echo, output_model=EchoOut,
                    side_effect_class=SideEffectClass.READ_ONLY,
                    idempotency=IdempotencyClass.NATURAL, cost=cost)


def _echo(call: ToolCall) -> EchoOut:
    return EchoOut()


@pytest.mark.parametrize("cost", [float("nan"), float("inf"), -1.0, 1e308, "5", True])
def test_a_tool_whose_cost_is_no_cost_is_refused(home: Path, cost: Any) -> None:
    cfg = make_config(limits=(Limit(scope="task", window_seconds=3600, max_cost=2),))
    with Runtime(home, config=cfg, graph_sync=False) as rt, \
            pytest.raises(InputError, match="cost"):
        rt.register_tool(_spec(cost), _echo)


def test_a_tool_of_a_cost_in_range_is_counted(home: Path) -> None:
    cfg = make_config(limits=(Limit(scope="task", window_seconds=3600, max_cost=2),))
    with Runtime(home, config=cfg, graph_sync=False) as rt:
        rt.register_tool(_spec(1), _echo)
        done = [rt.submit(proposal(f"p{i}", "test.priced", {"value": str(i)},
                                   agent="agent:tester", target="test:1", task_id="t")).status
                for i in range(3)]
    assert done == [OutcomeStatus.EXECUTED] * 2 + [OutcomeStatus.DENIED]
