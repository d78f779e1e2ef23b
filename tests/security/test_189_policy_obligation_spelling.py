"""A policy's obligation the runtime cannot read is refused at load, never read as none.

Finding (thirteenth attack review): obligations ride on Cedar annotations of a permit
(``@requires_approval("true")``, ``@approval_scope``, ``@requires_evidence("N")``,
``@on_deny``), and gate 1 read them as written or not at all: only the exact text
``"true"`` asked for a person — ``@requires_approval("yes")``, ``("True")`` or the bare
``@requires_approval`` asked nobody —, ``@requires_evidence("two")`` asked for one
document, and an annotation spelled like an obligation but not one (``@requires_aproval``,
``@Requires_Approval``) was no obligation. Cedar takes any annotation, so the policy set
loaded and the permit it sat on let the call through: the operator's rule that credits
above 500 need a person ran a credit of 800 unattended, the real ``cradle-kg submit`` said
``executed`` — an allow nobody wrote, from a policy whose author asked for a person.

Now each obligation's value is checked when the policies load (``"true"``/``"false"``, a
scope's name, a whole number of documents, ``repair``/``clarify``), and an annotation
spelled like an obligation is refused, naming the one it looks like: the home does not
open (one ``error:`` line naming the file and the policy, exit 2), so nothing runs under
the policy until it says what it means. Another annotation of the operator's own
(``@owner``) is left alone, and a policy written as documented loads as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import PolicyError
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import OutcomeStatus
from tests.inprocess import run_cli

pytestmark = pytest.mark.usefixtures("journal_backend")

BIG_CREDITS = """
@id("big-credits-need-a-person")
@owner("payments-team")
{obligation}
permit(principal, action == Action::"demo.ledger.credit", resource)
when {{ context.environment == "local" && context.arguments has amount
       && context.arguments.amount > 500 }};
"""
CREDIT = {"id": "p-big", "task_id": "task-big", "agent_id": AGENT,
          "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-4",
                     "arguments": {"account": "acct-4", "amount": 800}}}


def _policy(home: Path, obligation: str) -> None:
    (home / "policies" / "credits.cedar").write_text(
        BIG_CREDITS.format(obligation=obligation), encoding="utf-8")


def _intents(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events() if e.kind == "action.intent")


@pytest.mark.parametrize("obligation", [
    '@requires_approval("yes")', '@requires_approval("True")', "@requires_approval",
    '@requires_aproval("true")', '@Requires_Approval("true")',
    '@requires_evidence("two")', '@requires_approval("true")\n@approval_scope("")'])
def test_an_unreadable_obligation_stops_the_home(ledger_home: Path, obligation: str,
                                                 tmp_path: Path) -> None:
    _policy(ledger_home, obligation)
    with pytest.raises(PolicyError, match=r"credits\.cedar"):  # before: it opened
        Runtime(ledger_home, graph_sync=False)
    # the real command line: one line, exit 2, nothing ran (before: exit 0, executed)
    proposal = tmp_path / "credit.json"
    proposal.write_text(json.dumps(CREDIT), encoding="utf-8")
    done = run_cli("submit", str(proposal), "--home", str(ledger_home))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and "big-credits-need-a-person" in done.stderr
    assert "Traceback" not in done.stderr
    _policy(ledger_home, '@requires_approval("true")')
    with Runtime(ledger_home, graph_sync=False) as rt:
        assert _intents(rt) == 0


def test_a_documented_obligation_loads_as_before(ledger_home: Path) -> None:
    _policy(ledger_home, '@requires_approval("true")\n@approval_scope("payments")\n'
                         '@requires_evidence("0")')
    with Runtime(ledger_home, graph_sync=False) as rt:
        out = rt.submit(CREDIT)
        assert out.status is OutcomeStatus.AWAITING_APPROVAL, out.reasons
        assert out.approval is not None and out.approval.scope == "payments"
        assert _intents(rt) == 0
