"""A YAML number that is not finite (``.nan``, ``.inf``) is refused, as JSON refuses it.

Finding (tenth attack review, part two): every JSON document the runtime reads goes
through the strict loader, which refuses ``NaN`` and ``Infinity``; the strict YAML loader
(workflow files, ``POST /api/workflows/validate``, a pack's manifest, the proxy's
contracts) built YAML 1.1's ``.nan`` and ``.inf`` as floats. A JSON Schema bound of NaN
passes the schema's own check (it is a number) and then holds nothing — ``5000 > NaN`` is
false —, so a workflow whose tool step caps a credit with ``maximum: .nan`` was judged
``valid: true`` by the review step (the page, the API, ``workflow validate``), listed as
valid, and its step's input check let a credit of 5,000 through (``.inf`` the same; a
``minimum: .inf`` refused every value). The API showed the bound as ``null``.

Now the loader refuses a number that is not finite with its line, as it refuses one it
cannot build: ``valid: false`` over HTTP, ``INVALID``, a ``ContractsError``.
"""

from __future__ import annotations

import pytest

from cradle_kg import strict_yaml
from cradle_kg.errors import WorkflowFileError
from cradle_kg.workflow.definitions import parse_definition

CAPPED = """\
workflow: capped-credit
version: "1"
agent: agent:ledger-assistant
input:
  type: object
  properties:
    account: {type: string}
    amount: {type: integer, minimum: 1, maximum: BOUND}
  required: [account, amount]
  additionalProperties: false
steps:
  - id: review
    kind: human
    question: "Credit {amount} to {account}?"
    answers: [pay, hold]
    inputs: {account: input.account, amount: input.amount}
"""


@pytest.mark.parametrize("bound", [".nan", ".NaN", ".inf", "+.Inf", "-.INF"])
def test_a_bound_that_is_not_a_number_is_refused_with_its_line(bound: str) -> None:
    text = CAPPED.replace("BOUND", bound)
    with pytest.raises(WorkflowFileError) as refused:
        parse_definition(text, name="request body", definition="file:<r>")
    assert any(":8: " in p and "not a finite number" in p for p in refused.value.problems), \
        refused.value.problems


@pytest.mark.parametrize("text", ["a: .nan\n", "a: [1, .inf]\n", "a: {b: -.inf}\n"])
def test_the_loader_refuses_it(text: str) -> None:
    with pytest.raises(strict_yaml.YamlRefused, match="not a finite number"):
        strict_yaml.load(text)
    with pytest.raises(strict_yaml.YamlRefused, match="not a finite number"):
        strict_yaml.StrictLoader(text).get_single_data()


def test_finite_numbers_and_the_words_are_read() -> None:
    wf = parse_definition(CAPPED.replace("BOUND", "1000"), name="r", definition="file:<r>")
    with pytest.raises(Exception, match="1000"):
        wf.input_model.model_validate({"account": "a", "amount": 5000})
    assert strict_yaml.load("a: 1.5e+3\nb: nan\nc: 'inf'\nd: .5\n") == {
        "a": 1500.0, "b": "nan", "c": "inf", "d": 0.5}
