"""Another run's proposal cannot be made one node with yours by the ``/`` in an id.

Finding (the twenty-second review, provenance answers): a proposal's node, its intent's
and its facts' were keyed ``<run>/<proposal>[/attempt-N]`` and that whole key
percent-encoded — the ``/`` inside an id and the ``/`` between the parts both became
``%2F``. Run ids and proposal ids are the agent's to choose and may hold ``/`` (a
workflow's proposals always do: ``wf:…/pay/…``), so agent ``mallory`` proposing
``refunds/p-1`` in run ``team`` wrote onto the very node of ``agent:ledger-assistant``'s
proposal ``p-1`` in run ``team/refunds`` (and run ``refunds/p-2``'s ``attempt-1`` onto
the second attempt of ``p-2`` in run ``refunds``). The named queries then answered
falsely: ``why-allowed`` of the assistant's executed credit listed the evidence mallory
cited in its own denied proposal; ``task-effects`` of mallory's task listed the
assistant's credit as its effect; ``evidence-chain`` of mallory's fact named the
assistant as the agent that stated it — and nothing in ``audit verify`` looks at IRIs.

Now each part of the key is escaped before the parts are joined (``%`` as ``%25``, ``/``
as ``%2F``), so two different (run, proposal, attempt) never share a node; an id without
``/`` or ``%`` keeps its IRI. A real runtime on a temporary home, its Oxigraph store, the
named queries through ``cradle-kg query``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.graph.project import proposal_key

from .answers import answer
from .homes import credit
from .mcp_http import MALLORY, two_agent_home


@dataclass
class Scene:
    home: Path
    actions: list[str]  # the assistant's executed credits
    cited: str  # the evidence only mallory cited


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    home = two_agent_home(tmp_path_factory.mktemp("keys") / "home")
    with Runtime(home) as rt:
        cited = rt.add_evidence(b"mallory's own paper", kind="note", collector=MALLORY)
        actions = []
        for pid, run, attempt in (("p-1", "team/refunds", 0), ("p-2", "refunds", 1)):
            done = rt.submit(credit(pid, run=run, task="task-assistant", amount=5)
                             | {"attempt": attempt})
            assert done.status.value == "executed" and done.action is not None
            actions.append(done.action.id)
        for pid, run in (("refunds/p-1", "team"), ("attempt-1", "refunds/p-2")):
            # over the tool's limit: denied, nothing runs
            refused = rt.submit(credit(
                pid, run=run, task="task-mallory", agent=MALLORY, amount=10**9) | {
                "evidence_refs": [cited],
                "facts": [{"subject": "acct-1", "predicate": "reason", "object": "mine",
                           "source": MALLORY}]})
            assert refused.status.value == "denied", refused
    yield Scene(home, actions, cited)


def test_why_allowed_lists_only_the_evidence_the_action_had(scene: Scene) -> None:
    for action in scene.actions:
        rows = answer(scene.home, "why-allowed", action=action)
        assert len(rows) == 1, rows
        # before: mallory's evidence, cited by its denied proposal on the same node
        assert rows[0].get("evidence", "") == "", rows[0]


def test_task_effects_of_the_other_task_are_none(scene: Scene) -> None:
    # before: both of the assistant's credits, as the effects of mallory's task
    assert answer(scene.home, "task-effects", task="task-mallory") == []
    mine = answer(scene.home, "task-effects", task="task-assistant")
    assert sorted(r["action"].rsplit("/", 1)[1] for r in mine) == sorted(
        a.replace(":", "%3A") for a in scene.actions)


def test_a_fact_is_stated_by_its_own_proposals_agent(scene: Scene) -> None:
    for run, pid in (("team", "refunds/p-1"), ("refunds/p-2", "attempt-1")):
        rows = answer(scene.home, "evidence-chain", fact=f"{proposal_key(run, pid)}/0")
        assert rows, (run, pid)
        # before: the assistant too, whose proposal shared the node
        assert {r["agent"].rsplit("/", 1)[1] for r in rows} == {"agent%3Amallory"}, rows


@pytest.mark.parametrize(("one", "other"), [
    (("team/refunds", "p-1", 0), ("team", "refunds/p-1", 0)),
    (("refunds", "p-2", 1), ("refunds/p-2", "attempt-1", 0)),
    (("a%2Fb", "c", 0), ("a/b", "c", 0)),
    (("a", "b%2Fc", 0), ("a", "b/c", 0)),
])
def test_two_proposals_never_share_a_key(one: tuple[str, str, int],
                                         other: tuple[str, str, int]) -> None:
    assert proposal_key(one[0], one[1], attempt=one[2]) != proposal_key(
        other[0], other[1], attempt=other[2])
    assert proposal_key("run:t", "p") == "run:t/p"  # ids without `/` or `%`: as before
