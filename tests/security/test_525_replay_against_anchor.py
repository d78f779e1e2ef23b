"""Finding: strict replay "reproduced exactly" a journal cut at its tail.

``replay --strict`` proves each recorded event is what the code makes again, up to the
journal's own head. A journal handed over without its last runs — cut at its tail, or
re-chained without a run by its author with the public code — replays exactly to its
shorter head (exit 0, "reproduced N run(s) exactly"): the auditor is told "this is what
ran" of a journal that is not all that ran. Only ``audit verify --anchor`` (a head kept
elsewhere, ``audit anchor``) saw it, a separate command the replay never asked about:
``replay`` took no anchor at all.

Now ``replay --strict --anchor SEQ:HASH`` (``strict_replay(..., anchor=)``) refuses, before
replaying anything, a journal that does not contain the anchor (the walk's own check and
words, ``storage.walk.anchor_problem``): exit 1 naming the anchor and where the journal
ends. A journal that contains it replays as before, and says so ("contains anchor …").
Without an anchor the replay is what it was (nothing in a home records one: an anchor is
kept outside it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Proposal, Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.records import AuditEvent
from cradle_kg.storage import Anchor
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.workflow.replay import strict_replay
from tests.inprocess import run_cli
from tests.security.handed import rechained
from tests.security.homes import credit


def _two_runs(home: Path) -> Anchor:
    """Two credits, each its own run; the head after them, as `audit anchor` prints it."""
    prepare_home(home)
    with Runtime(home, graph_sync=False) as rt:
        for pid in ("p-first", "p-last"):
            assert rt.submit(Proposal.model_validate(credit(pid))).status.value == "executed"
    anchored = run_cli("audit", "anchor", "--home", str(home), "--format", "json")
    assert anchored.returncode == 0, anchored.stdout + anchored.stderr
    return Anchor.parse(json.loads(anchored.stdout)["anchor"])


def test_a_journal_holding_its_anchor_replays(tmp_path: Path) -> None:
    home = tmp_path / "home"
    anchor = _two_runs(home)  # the suite's journal (SQLite or PostgreSQL)
    # before: TypeError (no `anchor`), and `--anchor` no option of `replay` (exit 2)
    assert strict_replay(home, anchor=anchor).anchor == anchor
    for token in (str(anchor), anchor.hash):  # with its seq, or the hash alone
        cli = run_cli("replay", "--strict", "--anchor", token, "--home", str(home))
        assert cli.returncode == 0, cli.stdout + cli.stderr
        assert f"contains anchor {token}" in cli.stdout, cli.stdout
    bad = run_cli("replay", "--strict", "--anchor", "nope", "--home", str(home))
    assert bad.returncode == 2 and "Traceback" not in bad.stdout + bad.stderr, bad.stdout
    live = run_cli("replay", "--live", "--anchor", str(anchor), "--home", str(home))
    assert live.returncode == 2 and "only applies to --strict" in live.stdout + live.stderr


def _same(before: AuditEvent | None, ev: AuditEvent) -> tuple[str, dict[str, Any]]:
    del before
    return ev.subject, ev.payload


def _of(ev: AuditEvent, run: str) -> bool:
    """An event of ``run`` but the policy set it put in force (the other run needs it)."""
    return ev.run_id == run and ev.kind != "policyset.activated"


@pytest.mark.parametrize("cut", ["tail", "a_run"])
def test_a_journal_without_its_anchor_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: str) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)  # a handed home: its own file
    home = tmp_path / "home"
    anchor = _two_runs(home)
    gone = "run:task-p-last" if cut == "tail" else "run:task-p-first"
    handed = tmp_path / "handed"
    rechained(home, handed, _same, drop=lambda ev: _of(ev, gone))
    # without the anchor it replays exactly to its own (shorter) head, as documented
    assert strict_replay(handed).runs == [r for r in ("run:task-p-first", "run:task-p-last")
                                          if r != gone]
    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(handed, anchor=anchor)
    assert "does not contain the anchor" in caught.value.message, caught.value.message
    assert caught.value.seq == anchor.seq
    cli = run_cli("replay", "--strict", "--anchor", str(anchor), "--home", str(handed))
    assert cli.returncode == 1, cli.stdout + cli.stderr
    assert "does not contain the anchor" in cli.stdout + cli.stderr
    # the hash alone: not anywhere in the journal either
    with pytest.raises(ReplayDivergenceError):
        strict_replay(handed, anchor=Anchor(hash=anchor.hash))


def test_an_anchor_at_a_seq_the_journal_holds_otherwise_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An anchor taken before the first run's end, on a journal re-chained without the
    first run: the seq is there, its hash is another's."""
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = tmp_path / "home"
    last = _two_runs(home)
    handed = tmp_path / "handed"
    rechained(home, handed, _same, drop=lambda ev: _of(ev, "run:task-p-first"))
    with Runtime(home, graph_sync=False) as rt:
        early = next(e for e in rt.journal.events() if e.run_id == "run:task-p-first"
                     and e.kind == "run.outcome")
    assert last.seq is not None and early.seq < last.seq
    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(handed, anchor=Anchor(hash=early.hash, seq=early.seq))
    assert caught.value.seq == early.seq, caught.value.message
    assert "does not carry the anchored hash" in caught.value.message, caught.value.message
