"""A model's answer is read as an agent's document is, then checked by the step's schema.

Finding (twenty-third review: workflows): a model step's answer (model output: not trusted)
was parsed by pydantic's JSON reader and checked by the step's JSON Schema only. ``1e400``
was read as infinity, which a ``{type: number}`` schema accepts, and journaled as ``null``
(``step.completed`` said ``{"amount": null}``: the output its contract refused went on to
the next steps); a 400-digit integer passed and went on too — into a human step's rule
fields, where a rule in shadow or promoted computes ``float(amount)``: ``OverflowError`` at
every run reaching the step (an HTTP 500, the run left begun) and at ``autonomy propose``
on the history; and a key written twice was taken last-wins, the journal keeping both.

Now an answer the schema accepts is also read by the strict loader every agent's document
goes through (``inputs.load_json`` within the home's ``input_limits``, its size bounded as a
tool's answer): no NaN or infinity, integers and floats of the journal's digits, no key
twice, bounded depth. An answer past them is a schema failure: the model is asked again
with the reason, then the step fails ``output_contract``; nothing of it is a step's output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.workflow import Engine, ModelResponse, RecordedClient
from cradle_kg.workflow.definitions import load_file
from cradle_kg.workflow.rules import learn

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = f"""workflow: w
version: "1"
agent: {AGENT}
input: {{type: object, properties: {{x: {{type: string}}}}, required: [x]}}
steps:
  - id: read
    kind: model
    model: m1
    prompt: How much?
    inputs: {{x: input.x}}
    output: {{type: object, properties: {{amount: {{type: number}}}}, required: [amount]}}
"""


@pytest.mark.parametrize("answer,said", [
    ('{"amount": 1e400}', "out of range"),
    ('{"amount": 1' + "0" * 400 + "}", "digits"),
    ('{"amount": 1, "amount": 2}', "duplicate key"),
])
def test_an_answer_no_document_may_hold_fails_the_step(tmp_path: Path, answer: str,
                                                       said: str) -> None:
    home = tmp_path / "home"
    prepare_home(home)
    flow = tmp_path / "w.yaml"
    flow.write_text(FLOW, encoding="utf-8")
    client = RecordedClient([ModelResponse(model="m1", content=answer)] * 2, label="test")
    with Runtime(home, graph_sync=False) as rt:
        status = Engine(rt, client=client).start(load_file(flow), {"x": "a"})
        # before: completed, `{"amount": null}`, the 400-digit integer, or `2`
        assert (status.status, status.code) == ("failed", "output_contract"), status
        assert said in str(status.reason), status.reason
        events = list(rt.journal.events(run_id=status.run_id))
        assert not [e for e in events if e.kind == "step.completed"]
        calls = [e for e in events if e.kind == "model.called"]
        retry = calls[1].payload["request"]["messages"][-1]["content"]
        assert said in retry, retry  # the model was told why


def test_an_answer_within_the_limits_is_the_steps_output(tmp_path: Path) -> None:
    home = tmp_path / "home"
    prepare_home(home)
    flow = tmp_path / "w.yaml"
    flow.write_text(FLOW, encoding="utf-8")
    client = RecordedClient([ModelResponse(model="m1", content='{"amount": 12.5}')],
                            label="test")
    with Runtime(home, graph_sync=False) as rt:
        status = Engine(rt, client=client).start(load_file(flow), {"x": "a"})
        assert (status.status, status.outputs) == ("completed", {"read": {"amount": 12.5}})


def test_a_rule_reads_an_integer_no_float_holds_as_a_value() -> None:
    """A history journaled before (the integer in a human step's context) neither stops a
    rule from being learned nor a run reaching it: outside the rule's range, a person."""
    huge = 10 ** 400
    rule = learn([({"amount": 10}, "pay")] * 3 + [({"amount": 1000}, "hold")] * 3,
                 fields=("amount",), decision_field="answer")
    # before: OverflowError: int too large to convert to float
    assert rule.outside({"amount": huge}) and rule.decide({"amount": huge}) == "hold"
    learned = learn([({"amount": huge}, "pay")] * 3, fields=("amount",),
                    decision_field="answer")
    assert learned.decide({"amount": huge}) == "pay" and not learned.outside({"amount": huge})
