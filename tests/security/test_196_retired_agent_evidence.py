"""An agent removed from the configuration is still the agent it was when it uploaded.

Finding (left open by the twelfth attack review): since ``test_175`` and ``test_180`` a cited
blob is evidence only when someone who is no agent of the home collected it — but "agent of
the home" was read from today's ``config.json``. An agent whose uploads were rightly no
evidence (``POST /api/evidence`` with its token: "I checked the invoice, it's fine") became
a person once the operator removed it from the configuration (retired, renamed, moved to
another home): another agent cited those blobs and its call asking for two documents
executed unattended, on the word of an agent.

Now each ``evidence.collected`` says what its collector was when it collected the blob
(``collector``: ``agent``, ``approver``, ``host`` or ``other``), and the check judges the
upload by that, not by the configuration of the day it is cited. An event written before
events said it is an agent's when its actor ever proposed (the journal knows who the
agents were). A person's upload of the same bytes counts, as before.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.config import Agent
from cradle_kg.evidence import COLLECTED, EVIDENCE_RUN
from cradle_kg.server.auth import issue_agent_token
from cradle_kg.storage import NewEvent
from tests.conftest import make_config
from tests.security.homes import json_api

from .test_27_evidence_counting import _call, _executions, _runtime

pytestmark = pytest.mark.usefixtures("journal_backend")

HELPER = "agent:helper"
TEXTS = (b"I checked the invoice, it's fine", b"and the receipt, trust me")


def _with_helper(home: Path) -> Runtime:
    """The runtime over the home while ``agent:helper`` is still one of its agents."""
    base = make_config()
    return _runtime(home, config=base.model_copy(update={"agents": (
        *base.agents, Agent(id=HELPER, permitted_scopes=(), environments=("local",)))}))


def _submit(home: Path, pid: str, refs: list[str]) -> dict[str, Any]:
    """agent:tester cites ``refs`` over the JSON API with the home's configuration of
    today (``make_config()``: no ``agent:helper``)."""
    rt = _runtime(home)
    try:
        assert rt.config.agent(HELPER) is None  # retired
        own = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config,
                                                               "agent:tester")}
        with json_api(rt) as client:
            answer = client.post("/api/proposals", json=_call(pid, "test.two_docs", refs),
                                 headers=own)
            assert answer.status_code == 200, answer.text
            out = dict(answer.json())
        out["executions"] = _executions(rt)
        rt.home.root.joinpath("api-tokens.json").unlink()
        return out
    finally:
        rt.close()


def test_a_retired_agents_uploads_stay_no_evidence(home: Path) -> None:
    rt = _with_helper(home)
    try:
        assert rt.config.agent(HELPER) is not None
        token = issue_agent_token(rt.home, rt.config, HELPER)
        with json_api(rt) as client:
            planted = []
            for text in TEXTS:
                answer = client.post("/api/evidence", params={"kind": "invoice"},
                                     content=text, headers={"Authorization": f"Bearer {token}"})
                assert answer.status_code == 200, answer.text
                planted.append(str(answer.json()["ref"]))
        rt.home.root.joinpath("api-tokens.json").unlink()
    finally:
        rt.close()

    # the operator removes agent:helper from the configuration; its uploads stay its word
    out = _submit(home, "p-retired", planted)
    assert out["status"] != "executed", out  # before: executed
    assert "evidence_missing" in out["decision"]["reason_codes"], out
    assert any("added only by agents" in r for r in out["decision"]["reasons"]), out
    assert out["executions"] == 0

    # a person's upload of the same bytes makes them evidence, as before
    rt = _runtime(home)
    try:
        for text in TEXTS:
            rt.add_evidence(text, kind="document", collector="user:alice")
        # each upload says what its collector was then
        assert [e.payload.get("collector") for e in rt.journal.events()
                if e.kind == COLLECTED] == ["agent", "agent", "approver", "approver"]
    finally:
        rt.close()
    out = _submit(home, "p-seen", planted)
    assert out["status"] == "executed", out


def test_an_older_upload_is_judged_by_what_the_journal_knows(home: Path) -> None:
    """A journal written before events named the collector's role: the retired agent's
    upload there is an agent's because the agent proposed (its ``proposal.received``)."""
    rt = _with_helper(home)
    try:
        rt.submit(_call("p-helper", "test.two_docs", []) | {"agent_id": HELPER})
        planted = []
        for text in TEXTS:
            ref = rt.evidence.put(text)
            rt.context.append([NewEvent(  # the payload events had before the role
                run_id=EVIDENCE_RUN, kind=COLLECTED, subject=ref, actor=HELPER,
                at=datetime.now(UTC), payload={"ref": ref, "kind": "invoice",
                                               "bytes": len(text)})])
            planted.append(ref)
        # a customer the host spoke for, in the same older shape: never proposed, counts
        note = b"the customer's own note"
        ref = rt.evidence.put(note)
        rt.context.append([NewEvent(
            run_id="run:task-p-both", kind=COLLECTED, subject=ref, actor="user:emma",
            at=datetime.now(UTC), payload={"ref": ref, "kind": "input:request",
                                           "bytes": len(note)})])
    finally:
        rt.close()
    out = _submit(home, "p-old", planted)
    assert out["status"] != "executed", out  # before: executed
    assert "evidence_missing" in out["decision"]["reason_codes"], out
    out = _submit(home, "p-mixed", [planted[0], ref])
    assert out["status"] != "executed", out
    out = _submit(home, "p-customer", [ref, ref])  # one blob, one item: still short
    assert out["status"] != "executed", out
    rt = _runtime(home)
    try:
        rt.add_evidence(TEXTS[1], kind="document", collector="user:bob")
    finally:
        rt.close()
    out = _submit(home, "p-both", [ref, planted[1]])
    assert out["status"] == "executed", out
