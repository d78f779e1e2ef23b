"""Finding: a run whose human task a person closed no longer replayed.

A run escalated to a person (a repair budget spent, an intent recovery could not settle,
a verification without compensation) opens a ``human_task.opened``; the person closes it
(``tasks resolve``, ``POST /api/tasks/{id}/resolve``), which journals their
``human_task.resolved`` in the run. That event is a person's input, as their approval
decisions and step answers are, but strict replay took it for the run's own: it looked
for what would produce it and answered "diverges at seq 6 (`human_task.resolved`): no
replay trigger produces `human_task.resolved`" (exit 1) for a journal nobody touched. An
auditor is told a journal does not reproduce because someone did their job (the same
class as ``test_300``).

Now ``human_task.resolved`` is an input: copied, never re-derived; the run replays hash
for hash, and a run of nothing but it is no stray event (``test_438``).
"""

from __future__ import annotations

from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, prepare_home
from cradle_kg.records import OutcomeStatus, Proposal
from cradle_kg.workflow import LiveSettings, live_replay
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli
from tests.security.homes import credit

REPAIR = """@id("tiny-credits-repair")
@on_deny("repair")
@reason("credits under 5 are sent back")
forbid(principal, action == Action::"demo.ledger.credit", resource)
when { context.arguments has amount && context.arguments.amount < 5 };
"""


def test_a_run_whose_task_a_person_resolved_replays(tmp_path: Path) -> None:
    home = tmp_path / "home"
    prepare_home(home)
    (home / "policies" / "repair.cedar").write_text(REPAIR)
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"repair_budget": 0}))
    with Runtime(home, graph_sync=False) as rt:
        out = rt.submit(Proposal.model_validate(credit("p-tiny", amount=1)))
        assert out.status is OutcomeStatus.ESCALATED, out
        (task,) = [e for e in rt.journal.events() if e.kind == "human_task.opened"]
        assert strict_replay(home).runs == ["run:task-p-tiny"]  # open: replays
        rt.resolve_task(task.payload["task_id"], by=APPROVER, token=DEMO_TOKENS[APPROVER],
                        note="credited by hand")
        assert [e.kind for e in rt.journal.events()][-1] == "human_task.resolved"
    # before: "diverges at seq 6 (`human_task.resolved`): no replay trigger produces it"
    assert strict_replay(home).runs == ["run:task-p-tiny"]
    assert live_replay(home, [], LiveSettings()).changes == []
    cli = run_cli("replay", "--strict", "--home", str(home))
    assert cli.returncode == 0, cli.stdout + cli.stderr
