"""A tool step's target that its input does not fit fails the step; it never raises.

Finding (twenty-third review: workflows): a tool step's ``target`` was filled with
``str.format`` on the step's input as the caller gave it, outside the template helper that
fills prompts and questions (and turns what ``format`` raises into the step's failure). A
target with a format spec — ``"ledger:{account:s}"`` — given a number (the input schema let
the starter choose its type) raised ``ValueError`` out of ``start`` and every ``advance``
(an HTTP 500 at ``POST /api/workflows/{name}/runs``): the run was left begun,
``step.started`` and no end, walked by nobody to a failure. And the loader checked the
template's fields but not those nested in a format spec: ``"{account:>{width}}"`` built a
target ``width`` characters long from the starter's number (a gigabyte for
``width: 1000000000``) before any limit read it.

Now the target is filled by the same helper as a prompt (``steps.fill``): what ``format``
raises fails the step, ``input_contract``, and the run ends ``failed`` — typed, with its
end journaled. A replacement field inside a format spec is refused when the file is loaded,
with its line, in a target, a prompt and a question alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.errors import WorkflowFileError
from cradle_kg.workflow import Engine, RecordedClient
from cradle_kg.workflow.definitions import load_file, parse_definition

pytestmark = pytest.mark.usefixtures("journal_backend")

ANY = "{type: object, properties: {account: {}, amount: {type: integer}}, " \
      "required: [account, amount]}"


def _flow(target: str) -> str:
    return f"""workflow: w
version: "1"
agent: {AGENT}
input: {ANY}
steps:
  - id: pay
    kind: tool
    tool: demo.ledger.credit
    target: "{target}"
    inputs: {{account: input.account, amount: input.amount}}
    input: {ANY}
"""


def test_a_target_its_input_does_not_fit_fails_the_step(tmp_path: Path) -> None:
    home = tmp_path / "home"
    prepare_home(home)
    flow = tmp_path / "w.yaml"
    flow.write_text(_flow("ledger:{account:s}"), encoding="utf-8")
    with Runtime(home, graph_sync=False) as rt:
        engine = Engine(rt, client=RecordedClient([], label="test"))
        # before: ValueError: Unknown format code 's' for object of type 'int'
        status = engine.start(load_file(flow), {"account": 5, "amount": 1})
        assert (status.status, status.step, status.code) == ("failed", "pay",
                                                             "input_contract")
        assert "format code" in str(status.reason)
        kinds = [e.kind for e in rt.journal.events(run_id=status.run_id)]
        assert kinds == ["workflow.started", "step.started", "step.failed",
                         "workflow.failed"], kinds
        assert engine.advance(status.run_id).status == "failed"  # only reported


@pytest.mark.parametrize("key,template", [
    ("target", "ledger:{account:>{amount}}"),
    ("target", "ledger:{account:{amount}}"),
])
def test_a_field_inside_a_format_spec_is_refused_with_its_line(key: str,
                                                                template: str) -> None:
    # before: loaded; a start given amount=1000000000 built a 1 GB target
    with pytest.raises(WorkflowFileError) as caught:
        parse_definition(_flow(template), name="w.yaml", definition="file:w.yaml")
    assert caught.value.line == 9, caught.value.problems
    assert "format spec" in caught.value.message, caught.value.message


def test_a_prompt_or_question_with_a_field_inside_a_format_spec_is_refused() -> None:
    text = f"""workflow: w
version: "1"
agent: {AGENT}
input: {ANY}
steps:
  - id: ask
    kind: model
    model: m1
    prompt: "about {{account:>{{amount}}}}"
    inputs: {{account: input.account, amount: input.amount}}
    output: {{type: object}}
  - id: check
    kind: human
    question: "pay {{account:{{amount}}}}?"
    answers: [pay, hold]
    inputs: {{account: input.account, amount: input.amount}}
"""
    with pytest.raises(WorkflowFileError) as caught:
        parse_definition(text, name="w.yaml", definition="file:w.yaml")
    lines = sorted(p.split(":")[1] for p in caught.value.problems)
    assert lines == ["14", "9"], caught.value.problems
