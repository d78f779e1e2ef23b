"""Workflows used by the workflow tests (importable: replay finds them by definition)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from cradle_kg.demo.scenario import AGENT
from cradle_kg.workflow import HumanStep, ToolStep, Workflow


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")
    category: str
    amount: int


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    route: Literal["pay", "review"]


class Balance(BaseModel):
    account: str


class BalanceOut(BaseModel):
    account: str
    balance: int


def routing() -> Workflow:
    """One human step that progressive autonomy can learn."""
    return Workflow(id="routing", version="1", input_model=Case, agent=AGENT,
                    definition="tests.workflow.flows:routing",
                    steps=(HumanStep(id="route", input_model=Case, output_model=Decision,
                                     inputs={"category": "input.category",
                                             "amount": "input.amount"},
                                     decision_field="route",
                                     rule_fields=("category", "amount")),))


def close_via_balance_step() -> Workflow:
    """A tool step whose tool is not in the step's own whitelist."""
    return Workflow(id="sneaky", version="1", input_model=Balance, agent=AGENT,
                    definition="tests.workflow.flows:close_via_balance_step",
                    steps=(ToolStep(id="look", input_model=Balance, output_model=BalanceOut,
                                    inputs={"account": "input.account"},
                                    tool="demo.ledger.close_account",
                                    tools=("demo.ledger.balance",), target="ledger:{account}"),))
