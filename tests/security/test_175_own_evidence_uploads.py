"""The proposing agent's own uploads are no evidence for its proposals.

Finding (eleventh attack review; listed as open since the eighth: "an agent's own uploads
satisfy ``requires_evidence`` (who added a blob is recorded, not checked)"): a tool
declared ``requires_evidence=2`` — or a policy annotated ``@requires_evidence("2")``, or
one reading ``context.evidence_count`` — asks for documents someone else produced: an
invoice, a ticket, a signed report. But ``POST /api/evidence`` takes a blob from any token,
an agent's too, and gate 1 took any blob journaled as collected: the agent uploaded two
texts of its own ("I checked, it's fine") with its token, cited them, and the call
executed unattended — the evidence the operator asked for was the agent's word.

Now a cited blob is evidence for a proposal only when someone other than the proposing
agent collected it (a person's upload, a recorded request, a collector of the host's): the
newest such ``evidence.collected`` decides its freshness — one row read (``test_70``),
the agent's own uploads of it passed over by the database. The agent's own blobs are
"added only by the proposing agent" in the refusal (``evidence_missing``: the call asks
for evidence); the same blob once a person also uploaded it counts.

In process, through the app's real router (the agent's own token uploads and proposes),
on both journals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg.server.api import make_router
from cradle_kg.server.auth import issue_agent_token

from .test_27_evidence_counting import _call, _executions, _runtime

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_an_agents_own_uploads_are_no_evidence(home: Path) -> None:
    rt = _runtime(home)
    try:
        token = issue_agent_token(rt.home, rt.config, "agent:tester")
        auth = {"Authorization": f"Bearer {token}"}
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            def upload(text: bytes) -> str:
                answer = client.post("/api/evidence", params={"kind": "invoice"},
                                     content=text, headers=auth)
                assert answer.status_code == 200, answer.text
                return str(answer.json()["ref"])

            def submit(pid: str, tool: str, refs: list[str]) -> dict[str, Any]:
                answer = client.post("/api/proposals", json=_call(pid, tool, refs),
                                     headers=auth)
                assert answer.status_code == 200, answer.text
                return dict(answer.json())

            own = [upload(b"I checked the invoice, it's fine"),
                   upload(b"and the receipt too, trust me")]
            out = submit("p-own", "test.two_docs", own)
            assert out["status"] != "executed", out  # before: executed
            assert "evidence_missing" in out["decision"]["reason_codes"], out
            assert any("proposing agent" in r for r in out["decision"]["reasons"]), out
            out = submit("p-own-count", "test.counted", own)  # Cedar's evidence_count
            assert out["status"] == "denied", out  # before: executed
            assert _executions(rt) == 0

            # the same blobs, once a person also collected them, are evidence
            for text in (b"I checked the invoice, it's fine", b"and the receipt too, trust me"):
                rt.add_evidence(text, kind="document", collector="user:alice")
            assert submit("p-seen", "test.two_docs", own)["status"] == "executed"
            assert submit("p-seen-count", "test.counted", own)["status"] == "executed"
    finally:
        rt.close()
