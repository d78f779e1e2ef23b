"""An example workflow over the demo ledger: triage an incoming message, then maybe pay.

The seed's node contract made concrete — a message in (sender, subject, body), out a
category from a closed list, an urgency and a justification — followed by a human
routing decision (which progressive autonomy may learn) and a governed tool step that
credits the demo ledger only when the route is ``pay``.

The model step declares only ``sender``, ``subject`` and ``body``: the amount and the
account never enter the model's context.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..demo.scenario import AGENT
from .steps import HumanStep, ModelStep, ToolStep, Workflow


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Message(_Strict):
    sender: str
    subject: str
    body: str
    account: str = Field(pattern=r"^[A-Za-z0-9_.:-]+$")
    amount: int = Field(ge=0)


class TriageInput(_Strict):
    sender: str
    subject: str
    body: str


class Triage(_Strict):
    category: Literal["quote", "invoice", "support"]
    urgency: Literal["low", "high"]
    justification: str = Field(min_length=1)


class RouteInput(_Strict):
    category: str
    urgency: str
    amount: int


class Route(_Strict):
    route: Literal["pay", "review"]
    note: str | None = None


class PayInput(_Strict):
    account: str
    amount: int


class PayOutput(BaseModel):
    ok: bool
    applied: bool
    account: str
    amount: int


#: what the model step may read of a message (and nothing else)
MESSAGE_FIELDS_FOR_MODEL = ("sender", "subject", "body")
TRIAGE_PROMPT = ("Classify the message. category: quote, invoice or support; urgency: low or "
                 "high; justification: one sentence. Answer with JSON only.")


def invoice_triage() -> Workflow:
    return Workflow(
        id="invoice-triage", version="1", input_model=Message, agent=AGENT,
        definition="cradle_kg.workflow.examples:invoice_triage",
        steps=(
            ModelStep(id="classify", input_model=TriageInput, output_model=Triage,
                      inputs={f: f"input.{f}" for f in MESSAGE_FIELDS_FOR_MODEL},
                      prompt=TRIAGE_PROMPT, prompt_version="triage-v1",
                      model="qwen2.5-0.5b-instruct", max_tokens=200, cost=1.0),
            HumanStep(id="route", input_model=RouteInput, output_model=Route,
                      inputs={"category": "classify.category", "urgency": "classify.urgency",
                              "amount": "input.amount"},
                      decision_field="route", rule_fields=("category", "amount")),
            ToolStep(id="pay", input_model=PayInput, output_model=PayOutput,
                     inputs={"account": "input.account", "amount": "input.amount"},
                     tool="demo.ledger.credit", target="ledger:{account}",
                     when=("route.route", "pay")),
        ),
    )
