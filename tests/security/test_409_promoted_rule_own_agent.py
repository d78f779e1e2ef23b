"""A promoted rule never answers a step of a run whose agent acts for its promoter.

Finding (twenty-third review: autonomy): who may never approve a workflow agent's actions
— the agent, the person it acts for — never answers its human steps (``test_67``), nor
promotes the rule that answers them (``test_339``). Both are checked against the
workflow's agent *when* the person answers or promotes. A promoted rule then answers every
run of the step named ``<workflow>/<step>``, and a run is the step's by its workflow's id,
not by its file: the operator later points the workflow (a new version, or a copy of the
file kept under the same ``workflow:`` id) at another agent — here ``agent:frank-bot``,
which acts for Frank, the admin who promoted the rule. Its run's review was answered by
Frank's rule (``human.automated``, the run walked on past it): the action of Frank's agent
reviewed by Frank, where Frank answering it himself is refused. (``test_340`` closed the
same gap for the step's scope.)

Now a promoted rule answers a run only when its promoter is not excluded from the run's
agent (``excluded_for_agent``, as an answer is checked); otherwise the step waits for a
person (``human.requested``), the reason said, with the rule's suggestion.

The home and the shadow of ``test_339``; the run through the engine, as the CLI starts it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.loop.runtime import Runtime
from cradle_kg.workflow import runner

from .test_170_human_step_scope import INPUT
from .test_339_promote_outside_scope import FRANK, STEP, WF, _in_shadow

pytestmark = pytest.mark.usefixtures("journal_backend")

FRANKS_AGENT = "agent:frank-bot"


def _run(home: Path, run_id: str) -> list[str]:
    with Runtime(home, graph_sync=False) as rt:
        runner.start(runner.open_engine(rt), runner.find_definition(home, WF), INPUT,
                     run_id=run_id)
        return [e.kind for e in rt.journal.events(run_id=run_id)]


def test_a_rule_does_not_answer_for_its_promoters_own_agent(ledger_home: Path) -> None:
    _in_shadow(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        runner.open_engine(rt).autonomy.promote(WF, STEP, admin=FRANK, token="t-" + FRANK)
    assert "human.automated" in _run(ledger_home, "after-promotion")  # the rule answers

    config = load_config(ledger_home / "config.json")
    ledger = next(a for a in config.agents if a.id == AGENT)
    save_config(ledger_home / "config.json", config.model_copy(update={
        "agents": (*config.agents, ledger.model_copy(update={"id": FRANKS_AGENT,
                                                              "acts_for": FRANK})),
        "permissions": (*config.permissions, *(
            p.model_copy(update={"subject": FRANKS_AGENT}) for p in config.permissions
            if p.subject == AGENT))}))
    flow = ledger_home / "workflows" / "credit-review.yaml"
    flow.write_text(flow.read_text(encoding="utf-8").replace(
        f"agent: {AGENT}", f"agent: {FRANKS_AGENT}").replace('version: "1"', 'version: "2"'),
        encoding="utf-8")
    kinds = _run(ledger_home, "franks-credit")
    # before: `human.automated`: Frank's rule reviewed Frank's agent's credit
    assert "human.automated" not in kinds and "human.requested" in kinds, kinds
    with Runtime(ledger_home, graph_sync=False) as rt:
        asked = rt.journal.events_of_kind("human.requested")[-1].payload
    assert asked["suggestion"] == "hold" and asked["stage"] == "promoted", asked
    assert any(FRANK in r and FRANKS_AGENT in r for r in asked["reasons"]), asked

    flow.write_text(flow.read_text(encoding="utf-8").replace(
        f"agent: {FRANKS_AGENT}", f"agent: {AGENT}").replace('version: "2"', 'version: "3"'),
        encoding="utf-8")
    assert "human.automated" in _run(ledger_home, "ledger-credit")  # its own agent's again
