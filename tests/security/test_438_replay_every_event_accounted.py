"""Finding: strict replay of every run said "reproduced exactly" over events it never made.

``cradle-kg replay --strict`` with no run ids replays each run a proposal or a workflow
starts, each in its own scratch home, copying the rest of the journal as recorded. A run
that no ``proposal.received`` or ``workflow.started`` starts is no run it replays: its
events were only ever copied. The author of a handed journal (who may append through the
public code: a chain that holds) added a run of their own — an ``action.observed`` and a
``run.outcome`` of ``executed`` for a proposal nobody submitted — and ``replay --strict``
answered "strict replay reproduced 1 run(s) exactly: N events" (exit 0), N counting the
forged events. ``runs list`` and the graph show that run and its executed outcome.

Now, replaying every run, an event the runtime only ever derives (anything but a
person's or a command's input: approvals' decisions, uploads, claims, budgets, autonomy
commands, policy sets) in a run no replay starts is a divergence naming its seq: nothing
can make it again, so it is not reproduced. A journal as the runtime writes it has none
(the golden and demo journals replay as before).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.records import Proposal
from cradle_kg.storage import NewEvent, SqliteJournal
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli
from tests.security.homes import credit


def test_a_run_no_replay_starts_is_not_reproduced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)  # a handed home: its own file
    home = tmp_path / "home"
    prepare_home(home)
    with Runtime(home, graph_sync=False) as rt:
        assert rt.submit(Proposal.model_validate(credit("p-real"))).status.value == "executed"
        real = [e for e in rt.journal.events() if e.kind in ("action.observed", "run.outcome")]
    assert strict_replay(home).runs == ["run:task-p-real"]  # as written: reproduced

    with SqliteJournal(home / "journal.sqlite") as journal:  # the author's own run
        written = journal.append([
            NewEvent(run_id="run:ghost", kind=ev.kind, subject=ev.subject.replace(
                "p-real", "p-ghost"), actor=ev.actor, at=ev.at, payload=ev.payload)
            for ev in real])
    with pytest.raises(ReplayDivergenceError) as caught:  # before: "reproduced exactly"
        strict_replay(home)
    assert caught.value.seq == written[0].seq, caught.value.message
    assert "run:ghost" in caught.value.message, caught.value.message
    cli = run_cli("replay", "--strict", "--home", str(home))
    assert cli.returncode == 1, cli.stdout + cli.stderr
    # a run named on the command line is replayed alone, as before (the rest copied)
    assert strict_replay(home, ["run:task-p-real"]).runs == ["run:task-p-real"]
