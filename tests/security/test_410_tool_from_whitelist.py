"""A tool step whose tool an earlier output names has a whitelist of its own.

Finding (twenty-third review: workflows): a step's tools are the agent's ∩ the step's
whitelist (``tools``), whose default is "exactly ``tool``". A Python ``ToolStep`` may take
its tool from an earlier output instead (``tool_from``: a model's choice); left without
``tools``, its whitelist was the tool that output named — whichever it was. A model asked
to pick between reading a balance and a statement answered ``demo.ledger.close_account``,
and the step proposed closing the account: the step bounded nothing, the model's output
(untrusted) chose among every tool of the agent.

Now a workflow whose tool step names its tool by reference without a whitelist is refused
when it is built (``WorkflowError``), nothing run; with ``tools``, the choice stays inside
them (a tool outside fails the step, ``tool_not_allowed``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.workflow import (
    Engine,
    ModelResponse,
    ModelStep,
    RecordedClient,
    ToolStep,
    Workflow,
    WorkflowError,
)

pytestmark = pytest.mark.usefixtures("journal_backend")


class _Account(BaseModel):
    account: str


class _Pick(BaseModel):
    tool: str


class _Any(BaseModel):
    model_config = {"extra": "allow"}


def _workflow(tools: tuple[str, ...]) -> Workflow:
    return Workflow(
        id="pick", version="1", input_model=_Account, agent=AGENT,
        definition=f"{__name__}:whitelisted",
        steps=(ModelStep(id="choose", input_model=_Account, output_model=_Pick,
                         inputs={"account": "input.account"}, model="m1", prompt_version="p1",
                         prompt="Pick demo.ledger.balance or demo.ledger.statement."),
               ToolStep(id="act", input_model=_Account, output_model=_Any,
                        inputs={"account": "input.account"}, tool_from="choose.tool",
                        tools=tools, target="ledger:{account}")))


def whitelisted() -> Workflow:
    """The workflow with a whitelist (how the engine finds it again by its definition)."""
    return _workflow(("demo.ledger.balance",))


def test_a_tool_named_by_reference_needs_a_whitelist() -> None:
    # before: built; its run proposed `demo.ledger.close_account`, the model's answer
    with pytest.raises(WorkflowError, match="tools"):
        _workflow(())


def test_the_reference_chooses_inside_the_whitelist(tmp_path: Path) -> None:
    home = tmp_path / "home"
    prepare_home(home)
    client = RecordedClient([ModelResponse(model="m1",
                                           content='{"tool": "demo.ledger.close_account"}')],
                            label="test")
    with Runtime(home, graph_sync=False) as rt:
        status = Engine(rt, client=client).start(whitelisted(), {"account": "acct-1"})
        assert (status.status, status.step, status.code) == ("failed", "act",
                                                             "tool_not_allowed")
        assert not [e for e in rt.journal.events(run_id=status.run_id)
                    if e.kind == "proposal.received"]
