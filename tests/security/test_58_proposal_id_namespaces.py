"""A proposal's id cannot name one of the runtime's own records.

A proposal's events (``proposal.received``, ``decision.made``, its ``run.outcome`` when it
is denied or waits) have its id as their subject — the same column the runtime's own
records are found by: an action's intent, observation, verification and outcome are about
``act:<hex>``, an approval's events about ``approval:<digest>``, a human task's about
``task:<hex>``. Found by the semantic pass of ``audit verify`` (two outcomes settling one
action): an agent that named its proposal after another agent's executed action
(``act:<hex>``, which the action's outcome shows) and got it denied wrote a ``denied``
outcome onto that action —

* the action's recorded outcome (what a replay of its key answers) became ``denied``;
* ``open_intents`` (what recovery reconciles) dropped the action: a denied outcome "settles"
  its subject, so an intent left dangling by a crash was never reconciled;
* the events about the action moved on, so the fenced commit of a worker still working on
  it was refused (``if_last``, ``test_55``).

Now an agent's proposal whose id begins with a namespace the runtime names its records in
(``RESERVED_ID_NAMESPACES``: ``act:``, ``approval:``, ``task:``, ...) is a one-line
ProposalError and nothing is journaled; the runtime's own compensation proposals
(``comp:…``) are not submitted through that check.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import ProposalError
from cradle_kg.loop.outcomes import recorded_outcome
from cradle_kg.loop.proposal import RESERVED_ID_NAMESPACES
from tests.inprocess import run_cli

from .inputcli import credit, events, fresh_home, received

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _executed_action(home: Path) -> str:
    with Runtime(home) as rt:
        out = rt.submit(credit("p-victim"))
        assert out.status == "executed" and out.action is not None
        return out.action.id


def test_a_proposal_named_after_an_action_is_refused_and_the_action_keeps_its_outcome(
        tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    victim = _executed_action(home)
    before = events(home)
    # denied whatever its id (far over the demo's credit limit), so its outcome is written
    attack = credit(victim, action={"arguments": {"account": "acct-f", "amount": 10**9}})
    with Runtime(home) as rt:
        with pytest.raises(ProposalError, match="namespace the runtime names"):
            rt.submit(attack)  # before: "denied", its outcome about `victim`
        recorded = recorded_outcome(rt.journal, victim)
        assert recorded is not None and recorded.status == "executed"
    assert events(home) == before  # nothing journaled


@pytest.mark.parametrize("namespace", ["act", "approval", "task", "dec", "st", "ver",
                                       "budget", "step", "workflow"])
def test_every_entry_point_refuses_an_id_in_a_runtime_namespace(
        tmp_path: Path, namespace: str) -> None:
    home = fresh_home(tmp_path / "home")
    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps(credit(f"{namespace}:0123456789abcdef")), encoding="utf-8")
    done = run_cli("submit", str(proposal), "--home", str(home))  # the command, in process
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith("error: proposal: `id`: ") and "Traceback" not in done.stderr
    assert received(home) == 0  # nothing journaled (on either journal)


def test_ids_that_only_look_alike_still_go_through(tmp_path: Path) -> None:
    """The namespace is the text before the first colon: ``p-act:1``, ``actor:1`` and the
    MCP gateway's ``<session>:<step>`` are ids like any other."""
    home = fresh_home(tmp_path / "home")
    with Runtime(home) as rt:
        for pid in ("p-act:1", "actor:1", "mcp-20261205T085940-352d92c2:31", "act-1"):
            assert rt.submit(credit(pid)).status == "executed", pid


def _journal_subjects(journal: list[dict[str, object]]) -> set[tuple[str, str]]:
    """(namespace, kind) of every event whose subject is not a proposal's id."""
    proposals = {e["payload"]["proposal"]["id"] for e in journal  # type: ignore[index]
                 if e["kind"] == "proposal.received"}
    out = set()
    for e in journal:
        subject = str(e["subject"])
        namespace, colon, _ = subject.partition(":")
        if subject not in proposals and colon:
            out.add((namespace, str(e["kind"])))
    return out


@pytest.mark.parametrize("golden", ["demo", "invoice_triage"])
def test_every_namespace_the_runtime_writes_subjects_in_is_reserved(golden: str) -> None:
    """The list cannot fall behind the runtime: the subjects of the demo's and a
    workflow's journal that are not proposal ids are all in reserved namespaces."""
    journal = [json.loads(line) for line in
               (GOLDEN / golden / "journal.jsonl").read_text(encoding="utf-8").splitlines()]
    unreserved = {(n, k) for n, k in _journal_subjects(journal)
                  if n not in RESERVED_ID_NAMESPACES}
    assert not unreserved, unreserved
