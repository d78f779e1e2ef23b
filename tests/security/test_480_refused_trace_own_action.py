"""A refused proposal's lineage trace describes the refused proposal's own action.

Finding (left by the twenty-fourth review's reviewers): layout 5 gave a proposal gate 1
refused an action node of its own (``act:<key>/<decision>``, test_468), but the
``lineage.traced`` event journaled with the decision still named the action by its key
(``act:<key>``), and its projection attached the refused call's arguments — their values,
origins and trust — to the node of the action its key later ran. A send to mallory frozen
by a forbid and a send to alice under the same pinned key afterwards made the executed
action's ``to`` argument hold both addresses in the graph (``run-lineage`` and every
argument query read mallory's address as an argument of the mail that went to alice).

Now the trace journaled with a refusal names the refused proposal's own action
(``act:<key>/<decision>``, the name the decision's projection gives it:
``proposed_action_id``), so its arguments are projected onto that node; the action that
ran carries only the arguments it ran with. A journal written before keeps its traces as
they were (its graph as it was).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.records import AuditEvent, IdempotencyClass, OutcomeStatus, SideEffectClass
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.tools import ToolSpec
from tests.lineage.kit import AGENT, Free, lineage_runtime, verified
from tests.security.handed import Rewrite, rechained

pytestmark = pytest.mark.usefixtures("journal_backend")

FORBID = """@id("no-mallory")
forbid(principal, action == Action::"send_note", resource);
"""


class Note(BaseModel):
    to: str


def _note(pid: str, n: int, to: str) -> dict[str, object]:
    return {"id": pid, "task_id": "t", "agent_id": AGENT, "run_id": "run:t", "step": n,
            "action": {"action_type": "send_note", "target": "mail:x",
                       "idempotency_key": "k", "arguments": {"to": to}}}


def test_a_refused_calls_arguments_stay_off_the_action_that_ran(tmp_path: Path) -> None:
    home = tmp_path / "home"
    freeze = home / "policies" / "freeze.cedar"
    rt = lineage_runtime(home)
    try:
        rt.register_tool(ToolSpec(id="send_note", version="1", input_model=Note,
                                  output_model=Free, target_from="mail:*",
                                  side_effect_class=SideEffectClass.REVERSIBLE,
                                  idempotency=IdempotencyClass.NATURAL, verifier="ok"),
                         lambda call: Free(result="ok"))
        rt.register_verifier("ok", verified(lambda: {"ok": True}))
        freeze.write_text(FORBID, encoding="utf-8")
        refused = rt.submit(_note("p1", 1, "mallory@evil.example"))
        assert refused.status is OutcomeStatus.DENIED, refused.reasons
        freeze.unlink()
        done = rt.submit(_note("p2", 2, "alice@corp.example"))
        assert done.status is OutcomeStatus.EXECUTED, done.reasons
        assert done.action is not None
        traced = [e for e in rt.journal.events(run_id="run:t") if e.kind == "lineage.traced"]
        assert len(traced) == 2  # both proposals were traced
        store = rt.graph()
        assert store is not None
        rt.sync_graph()
        rows = store.query("""PREFIX cradle: <https://w3id.org/cradle#>
            SELECT ?action ?value WHERE { GRAPH ?g {
              ?action cradle:hasArgument ?arg . ?arg cradle:argumentName "to" ;
                      cradle:argumentValue ?value } }""")
        by_action: dict[str, set[str]] = {}
        for r in rows:
            by_action.setdefault(r["action"].value, set()).add(r["value"].value)
    finally:
        rt.close()
    ran = next(a for a in by_action if a.endswith(done.action.id.replace(":", "%3A")))
    # before: {'alice@corp.example', 'mallory@evil.example'}
    assert by_action[ran] == {"alice@corp.example"}, by_action
    assert {"mallory@evil.example"} in by_action.values(), by_action


def test_the_run_replays_strictly(tmp_path: Path) -> None:
    import json
    import shutil

    from cradle_kg import Runtime
    from cradle_kg.workflow.replay import strict_replay

    home = tmp_path / "home"
    (home / "policies").mkdir(parents=True)
    (home / "policies" / "all.cedar").write_text(
        '@id("all")\npermit(principal, action, resource);\n')
    shutil.copytree(Path(__file__).parents[1] / "lineage" / "mailpack",
                    home / "packs" / "mailpack")
    (home / "config.json").write_text(json.dumps({
        "agents": [{"id": "agent:mailer"}], "permissions": [{"subject": "agent:mailer"}],
        "packs": ["test.mail"]}))
    freeze = home / "policies" / "freeze.cedar"

    def send(n: int, amount: int) -> OutcomeStatus:
        with Runtime(home, graph_sync=False) as rt:
            return rt.submit({
                "id": f"p{n}", "task_id": "m", "agent_id": "agent:mailer", "run_id": "run:m",
                "step": n, "action": {"action_type": "send_money", "target": "bank",
                                      "idempotency_key": "k", "arguments": {
                                          "recipient": "DE89370400440532013000",
                                          "amount": amount}}}).status

    freeze.write_text('@id("freeze")\nforbid(principal, action, resource);\n')
    assert send(1, 60) is OutcomeStatus.DENIED
    freeze.unlink()
    assert send(2, 50) is OutcomeStatus.EXECUTED
    with Runtime(home, graph_sync=False) as rt:
        traced = [e.payload["trace"]["action_id"] for e in rt.journal.events(run_id="run:m")
                  if e.kind == "lineage.traced"]
    assert len(traced) == 2 and traced[0].startswith(traced[1] + "/"), traced
    assert strict_replay(home, ["run:m"]).runs == ["run:m"]
    if os.environ.get(JOURNAL_URL_ENV):
        return  # the journals below are SQLite files an author wrote

    # a journal recorded before this change: the refused trace names its key's action
    def named(to: str) -> Rewrite:
        def rewrite(_: AuditEvent | None, ev: AuditEvent) -> tuple[str, dict[str, Any]]:
            if ev.kind != "lineage.traced" or ev.subject != traced[0]:
                return ev.subject, ev.payload
            return to, {**ev.payload, "trace": {**ev.payload["trace"], "action_id": to}}
        return rewrite

    rechained(home, tmp_path / "before", named(traced[1]))
    assert strict_replay(tmp_path / "before", ["run:m"]).runs == ["run:m"]
    # any other name still diverges, at that event
    rechained(home, tmp_path / "other", named(traced[1] + "x"))
    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(tmp_path / "other", ["run:m"])
    assert "lineage.traced" in caught.value.message, caught.value.message
