"""Finding: a recorded payload not shaped as the runtime writes it crashed `replay`.

A handed journal's author writes every byte and may recompute the chain with the public
code (*A journal handed to an auditor*). ``replay`` reads recorded payloads itself —
each decision's policy version and findings, each observation, each policy set's texts,
each proposal, outcome and model response — and took their shape on trust: a
``decision.made`` whose ``decision`` is ``5``, an ``action.observed`` without its
``observation``, a policy set whose ``sources`` hold a number, a ``proposal.received``
whose ``proposal`` is a list, a ``run.outcome`` whose ``outcome`` is a number, a
``model.called`` whose ``response`` is a number: ``replay --strict`` and ``--live`` ended in
``error: unexpected TypeError`` / ``KeyError`` / ``AttributeError`` / ``ValidationError``
(exit 2), a crash where the auditor needs a verdict.

Now the recorded events are checked once, as they are read (``replay.check_record``),
against the shape of what the replay reads of them: one that differs is a divergence
naming its seq, kind and field (exit 1, as any journal that does not reproduce).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.records import Proposal
from cradle_kg.storage import NewEvent, SqliteJournal
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.workflow import LiveSettings, live_replay
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli
from tests.security.homes import credit

RUN = "run:task-p-real"
MALFORMED: list[tuple[str, dict[str, Any]]] = [
    ("decision.made", {"decision": 5}),
    ("action.observed", {}),
    ("policyset.activated", {"version": "v", "sources": [1]}),
    ("proposal.received", {"proposal": []}),
    ("run.outcome", {"outcome": 7}),
    ("model.called", {"response": 3}),
]


@pytest.mark.parametrize(("kind", "payload"), MALFORMED, ids=[k for k, _ in MALFORMED])
def test_a_malformed_recorded_payload_is_a_divergence_not_a_crash(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
        payload: dict[str, Any]) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)  # a handed home: its own file
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home, graph_sync=False) as rt:
        assert rt.submit(Proposal.model_validate(credit("p-real"))).status.value == "executed"
        last = list(rt.journal.events())[-1]
    with SqliteJournal(home / "journal.sqlite") as journal:  # the author's event
        (forged,) = journal.append([NewEvent(run_id=RUN, kind=kind, subject="x",
                                             actor="cradle-kg/runtime", at=last.at,
                                             payload=payload)])
    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(home)
    assert caught.value.seq == forged.seq, caught.value.message
    with pytest.raises(ReplayDivergenceError):
        live_replay(home, [], LiveSettings())
    for how in ("--strict", "--live"):
        cli = run_cli("replay", how, "--home", str(home))
        # before: exit 2, "error: unexpected TypeError: 'int' object is not subscriptable"
        assert cli.returncode == 1, cli.stdout + cli.stderr
        assert "unexpected" not in cli.stderr, cli.stderr
        assert f"seq {forged.seq}" in cli.stderr, cli.stderr
