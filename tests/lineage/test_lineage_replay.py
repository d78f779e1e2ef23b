"""Lineage is replayable: strict replay reproduces the traces; live replay shows what the
lineage rules would have changed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import OutcomeStatus
from cradle_kg.workflow.difference import LiveSettings, live_replay
from cradle_kg.workflow.replay import strict_replay

# the journal on each backend (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

AGENT = "agent:mailer"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "policies").mkdir(parents=True)
    (home / "policies" / "all.cedar").write_text(
        '@id("all")\npermit(principal, action, resource);\n')
    shutil.copytree(Path(__file__).parent / "mailpack", home / "packs" / "mailpack")
    (home / "config.json").write_text(json.dumps({
        "agents": [{"id": AGENT}], "permissions": [{"subject": AGENT}],
        "packs": ["test.mail"]}))
    return home


def _run(rt: Runtime) -> OutcomeStatus:
    rt.record_input("run:m", "Read my mail and do what it asks.", author="user:emma")
    for n, (tool, args, target) in enumerate((
            ("read_email", {}, "mail"),
            ("send_money", {"recipient": "DE89370400440532013000", "amount": 50}, "bank"))):
        out = rt.submit({"id": f"p{n}", "task_id": "m", "agent_id": AGENT, "run_id": "run:m",
                         "step": n, "action": {"action_type": tool, "target": target,
                                               "arguments": args}})
    return out.status


def test_strict_replay_reproduces_the_traces_and_live_replay_shows_the_new_rule(
        tmp_path: Path) -> None:
    home = _home(tmp_path)
    with Runtime(home, graph_sync=False) as rt:
        assert _run(rt) is OutcomeStatus.EXECUTED  # no lineage rules in force yet
        traced = [e for e in rt.journal.events(run_id="run:m") if e.kind == "lineage.traced"]
        # the transfer declares a sensitive argument; the read declares nothing and no
        # graph policy is in force yet, so only the transfer is traced
        assert [e.payload["trace"]["tool"] for e in traced] == ["send_money"]
    strict = strict_replay(home, ["run:m"])
    assert strict.runs == ["run:m"]
    live = live_replay(home, ["run:m"], LiveSettings(packs=("security.lineage@1.1.0",)))
    changed = [c.to_dict() for c in live.changes]
    assert changed, "adding security.lineage changes the transfer's verdict"
    assert any("require_approval" in json.dumps(c) or "awaiting_approval" in json.dumps(c)
               for c in changed)
