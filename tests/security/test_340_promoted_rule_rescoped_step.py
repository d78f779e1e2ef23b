"""A promoted rule answers a step only while its promoter may answer the step as asked.

Finding (twenty-first review, beside ``test_339``): ``promote`` checks that the admin may
answer the step as the runs of its history define it — once. The operator then edits the
workflow file so that the step is asked within another scope (``refunds``, not
``payments``): a new run of it asks its review within a scope its promoter may not
answer, and the rule the promoter handed the step to answered it all the same
(``human.automated``), where a decision by that admin would be refused.

Now the promotion records the admin's scopes (``admin_scopes``), and the rule answers a
request only when they reach the step as it is asked now; otherwise the step waits for a
person (``human.requested``), the reason said with the rule's suggestion ("promote
again"). A promotion journaled before this round, which records no scopes, answers as
before.

The real CLI (in process), on the home of ``test_339``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.loop.runtime import Runtime
from tests.inprocess import run_cli

from .test_170_human_step_scope import INPUT
from .test_339_promote_outside_scope import FRANK, STEP, WF, _in_shadow

pytestmark = pytest.mark.usefixtures("journal_backend")


def _run(home: Path, run_id: str) -> list[str]:
    done = run_cli("workflow", "run", WF, "--input", json.dumps(INPUT), "--run", run_id,
                   "--home", str(home), "--format", "json")
    assert done.returncode == 0, done.stderr
    with Runtime(home, graph_sync=False) as rt:
        return [e.kind for e in rt.journal.events(run_id=run_id)]


def test_a_rule_stops_answering_a_step_rescoped_beyond_its_promoter(ledger_home: Path) -> None:
    _in_shadow(ledger_home)
    promoted = run_cli("autonomy", "promote", WF, STEP, "--as", FRANK, "--home",
                       str(ledger_home), env={"CRADLE_APPROVER_TOKEN": "t-" + FRANK})
    assert promoted.returncode == 0, promoted.stderr
    assert "human.automated" in _run(ledger_home, "after-promotion")  # the rule answers

    flow = ledger_home / "workflows" / "credit-review.yaml"
    flow.write_text(flow.read_text(encoding="utf-8").replace(
        "scope: payments", "scope: refunds").replace('version: "1"', 'version: "2"'),
        encoding="utf-8")
    kinds = _run(ledger_home, "after-edit")
    # before: `human.automated`, the review answered by the rule of a `payments` admin
    assert "human.automated" not in kinds and "human.requested" in kinds, kinds
    with Runtime(ledger_home, graph_sync=False) as rt:
        asked = rt.journal.events_of_kind("human.requested")[-1].payload
    assert asked["suggestion"] == "hold" and asked["stage"] == "promoted", asked
    assert any("refunds" in r and FRANK in r for r in asked["reasons"]), asked
