"""A number in a proposal's arguments is never left out of Cedar's context.

Finding: gate 1 built Cedar's ``context.arguments`` from the proposal's raw arguments,
keeping only strings, booleans and integers — a float was silently left out. The demo's
own limit, ``forbid … when { context.arguments has amount && context.arguments.amount >
1000 }``, was bypassed by writing the amount as ``5000.0``: Cedar saw no ``amount``, the
forbid did not apply, and the tool — whose model reads ``5000.0`` as the integer 5000 —
credited 5,000 (a balance of 5,000 after one call). A tool whose amount *is* a float was
open the same way (``5000.5``). Now no number is left out: a whole float is given as the
integer it is (what an integer field receives), a number Cedar's ``Long`` cannot hold (a
fraction, past 2^62) as its text — comparing it is a type error, and a policy that fails
to evaluate denies (fail closed). Only what has no scalar form (a list, an object, null)
is still absent from ``context.arguments``.

What holds (checked here): ``5000`` and ``"5000"`` are denied by the same policy (the
string because Cedar cannot compare it: fail closed); ``1000.5`` on the integer tool is
refused by its contract; amounts under the limit run. ``test_13``'s typed cases (``"500"``,
``true``) stay denied.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from cradle_kg import Runtime, ToolSpec
from cradle_kg.demo.scenario import ledger_for
from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass
from tests.conftest import EchoOut, make_config, proposal, register_test_tools
from tests.security.test_04_proposal_id_reuse import credit

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOAT_POLICY = """
@id("float-limit")
forbid(principal, action == Action::"test.pay", resource)
  when { context.arguments has amount && context.arguments.amount > 100 };
"""


class Pay(BaseModel):
    amount: float


@pytest.mark.parametrize("amount", [5000, 5000.0, "5000", 1000.5, 1e3 + 0.25])
def test_the_demo_credit_limit_holds_however_the_amount_is_written(
        rt: Runtime, amount: object) -> None:
    out = rt.submit(credit("p-" + str(amount), amount, run_id=None)  # type: ignore[arg-type]
                    | {"task_id": "t-" + str(amount)})
    assert out.status is OutcomeStatus.DENIED, (amount, out.reasons)
    assert ledger_for(rt).balance("acct-1") == 0


def test_an_amount_under_the_limit_runs(rt: Runtime) -> None:
    for amount in (250, 250.0):
        out = rt.submit(credit(f"p-ok-{amount}", amount, run_id=None)  # type: ignore[arg-type]
                        | {"task_id": f"t-ok-{amount}"})
        assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert ledger_for(rt).balance("acct-1") == 500


def test_a_float_argument_is_not_left_out_of_the_context(home: Path) -> None:
    (home / "policies" / "float.cedar").write_text(FLOAT_POLICY)
    rt = Runtime(home, config=make_config())
    try:
        register_test_tools(rt)
        rt.register_tool(ToolSpec(
            id="test.pay", version="1", input_model=Pay, output_model=EchoOut,
            side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
            blast_radius=("test:*",), target_from="test:*", verifier="test.ok"),
            lambda call: EchoOut())
        for pid, amount in (("p-big", 5000.5), ("p-int", 5000), ("p-whole", 5000.0)):
            out = rt.submit(proposal(pid, "test.pay", {"amount": amount}, agent="agent:tester",
                                     target="test:a"))
            assert out.status is OutcomeStatus.DENIED, (amount, out.reasons)
        small = rt.submit(proposal("p-small", "test.pay", {"amount": 50.5},
                                   agent="agent:tester", target="test:a"))
        assert small.status is OutcomeStatus.DENIED  # a fraction cannot be compared: fail closed
        assert any("policy" in r for r in small.reasons), small.reasons
        assert rt.submit(proposal("p-small-int", "test.pay", {"amount": 50},
                                  agent="agent:tester", target="test:a")).status \
            is OutcomeStatus.EXECUTED
        # only the last call reached the tool
        assert sum(1 for e in rt.journal.events() if e.kind == "action.intent") == 1
    finally:
        rt.close()
