"""Integrity rule 2 after a reusable approval was revoked following its use.

A revoke used to retract ``cradle:Approved``: right when no action had run under the
approval (the only revoke there was), wrong now that a used reusable approval can be
revoked (``test_316``) — the actions that ran under it before would read unapproved.
Now such a revoke (``"used": true``) keeps ``cradle:Approved`` and says where it is in
the journal (``cradle:revokedSeq``), each intent under an approval says where it is
(``cradle:intentSeq``), and rule 2 wants an action under a revoked approval to have its
intent before the revoke — the journal's order, not the clocks. ``audit verify
--semantics`` agrees (an intent after the revoke, not before), ``replay --strict``
reproduces such a run, and ``validate --all`` reads rule 2's nested patterns (its bulk
reader fetched nothing of a ``FILTER NOT EXISTS`` inside another: a violation there was
never seen).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.storage import NewEvent
from tests.inprocess import run_cli

from .test_284_approved_key_other_arguments import _intents
from .test_304_revoke_an_approval import revoke
from .test_316_used_reusable_approval_revoked import asked_anew, used_reusable

pytestmark = pytest.mark.usefixtures("journal_backend")

C = "https://w3id.org/cradle#"
SEQS = ("PREFIX cradle: <https://w3id.org/cradle#> SELECT ?status ?revoked ?awaits WHERE { "
        "?a cradle:approvalStatus ?status ; cradle:revokedSeq ?revoked . "
        "OPTIONAL { ?a cradle:awaitsUse ?awaits } FILTER(STRENDS(STR(?a), \"{id}\")) }")
INTENTS = ("PREFIX cradle: <https://w3id.org/cradle#> SELECT ?seq WHERE { "
           "?a cradle:authorizes ?d . ?act cradle:authorizedBy ?d ; cradle:intentSeq ?seq . "
           "FILTER(STRENDS(STR(?a), \"{id}\")) }")


def _revoked_after_two_uses(home: Path) -> str:
    with Runtime(home) as rt:  # the graph kept in step
        approval = used_reusable(rt, uses=2)
        revoke(rt, approval.id)
        asked_anew(rt, approval)
        graph = rt.graph()
        assert graph is not None
        tail = approval.id.split(":")[-1]
        [(status, revoked, awaits)] = [tuple(r) for r in graph.query(SEQS.replace("{id}", tail))]
        assert str(status).strip("<>") == C + "Approved" and awaits is None  # before: Revoked
        seqs = sorted(int(str(r[0]).split('"')[1]) for r in graph.query(
            INTENTS.replace("{id}", tail)))
        assert len(seqs) == 2 and seqs[-1] < int(str(revoked).split('"')[1]), (seqs, revoked)
    return approval.id


def test_the_actions_before_the_revoke_stay_approved(tmp_path: Path) -> None:
    from .mcp_http import two_agent_home

    home = two_agent_home(tmp_path / "home")
    _revoked_after_two_uses(home)
    for args in (("validate", "--all"), ("audit", "verify", "--semantics"),
                 ("replay", "--strict", "run:alice")):
        done = run_cli(*args, "--home", str(home))
        assert done.returncode == 0, (args, done.stdout + done.stderr)


def _forged_after(rt: Runtime, approval_id: str) -> str:
    """An intent under the approval written after its revoke, and its observation — what
    the intent's guard refuses, appended here without it (a journal of someone who
    bypassed it): a copy of its last use under a new key."""
    events = list(rt.journal.events())
    intent = [e for e in events if e.kind == "action.intent"
              and e.payload.get("approval_id") == approval_id][-1]
    [observed] = [e for e in events if e.kind == "action.observed"
                  and e.subject == intent.subject]
    key = "key:forged-after-the-revoke"
    action = {**intent.payload["action"], "id": "act:" + key, "idempotency_key": key}
    obs = {**observed.payload["observation"], "execution_id": action["id"],
           "id": "obs:" + key}
    payload: dict[str, Any] = {**intent.payload, "action": action}
    rt.journal.append([
        NewEvent(run_id=intent.run_id, kind="action.intent", subject=action["id"],
                 actor=intent.actor, at=intent.at, payload=payload, idem_key=key),
        NewEvent(run_id=observed.run_id, kind=observed.kind, subject=action["id"],
                 actor=observed.actor, at=observed.at,
                 payload={**observed.payload, "observation": obs})])
    return str(action["id"])


def test_an_action_after_the_revoke_breaks_rule_2_and_the_semantics(tmp_path: Path) -> None:
    from .mcp_http import two_agent_home

    home = two_agent_home(tmp_path / "home")
    approval_id = _revoked_after_two_uses(home)
    with Runtime(home, graph_sync=False) as rt:
        forged = _forged_after(rt, approval_id)
        assert len(_intents(rt)) == 3
    rebuilt = run_cli("graph", "rebuild", "--home", str(home))
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    for engine in ("rust", "pyshacl"):  # the bulk reader (rust) and the whole graph
        checked = run_cli("validate", "--all", "--engine", engine, "--format", "json",
                          "--home", str(home))
        assert checked.returncode == 1, (engine, checked.stdout + checked.stderr)
        rule2 = {v["focus_node"] for v in json.loads(checked.stdout)["violations"]
                 if v["rule"] == 2}
        # only the action after the revoke; the two before it stay approved
        assert rule2 == {f"https://w3id.org/cradle/id/action/{forged.replace(':', '%3A')}"
                         }, (engine, rule2)
    verified = run_cli("audit", "verify", "--semantics", "--home", str(home))
    assert verified.returncode == 1, verified.stdout + verified.stderr
    said = " ".join((verified.stdout + verified.stderr).split())
    assert "revoked before it" in said and forged in said, said
