"""Another agent's token reads no run's subjects: no blob's address, no proposal's id.

Finding (twelfth attack review; left open by the eleventh: "``/api/runs`` still shows any
token every run's events' kind, actor and subject"): ``test_173`` kept a run's values (its
``why``, its lanes) to its own agent and the approvers, but every event's ``subject`` — the
address of each blob, the id of each proposal — stayed any token's. A person's upload is
journaled in the runtime's run ``evidence`` (``evidence.collected`` about ``sha256:…``), so
an agent's token listed ``GET /api/runs/evidence`` and had the address of every document
anyone uploaded — another case's invoices — which a proposal then cites: evidence is counted
by who collected it and when (``test_175``, ``test_180``), and the call that asked for two
documents executed unattended on documents nobody gave the agent. The graph closed
(``serve --graph-readers approvers``), this was the way to them. A run's proposal ids
(an agent's labels: ``refund-jane-roe``) were listed in ``proposals`` and ``outcomes`` too.

Now a run's events' subjects and its summary's proposal ids are for those who read its
values (``reads_run``: the approvers and the run's own agent); another token gets each
event's kind, actor and time with ``subject`` null, and the summary's counts and state
(``proposals`` and ``outcomes`` empty). A blob's address is known to whoever was given it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.demo.scenario import AGENT as LEDGER
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

from .test_27_evidence_counting import _call, _executions, _runtime

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_another_agents_token_reads_no_subjects(home: Path) -> None:
    rt = _runtime(home)
    try:
        bob = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
        tester = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config,
                                                                  "agent:tester")}
        ledger = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, LEDGER)}
        with json_api(rt) as client:
            def get(path: str, auth: dict[str, str]) -> Any:
                answer = client.get(path, headers=auth)
                assert answer.status_code == 200, answer.text
                return answer.json()

            refs = []
            for text in (b"invoice 4471, Jane Roe", b"receipt 4471, Jane Roe"):
                answer = client.post("/api/evidence", params={"kind": "invoice"},
                                     content=text, headers=bob)
                assert answer.status_code == 200, answer.text
                refs.append(str(answer.json()["ref"]))

            # the tester agent looks for documents to cite, and cites what it found
            listed = get("/api/runs/evidence", tester)
            found = [e["subject"] for e in listed["events"] if e["subject"]]
            assert found == [], found  # before: both addresses
            assert [e["kind"] for e in listed["events"]] == ["evidence.collected"] * 2
            assert {e["actor"] for e in listed["events"]} == {APPROVER}
            out = client.post("/api/proposals", headers=tester,
                              json=_call("refund-jane-roe", "test.two_docs", found))
            assert out.status_code == 200, out.text
            assert out.json()["status"] != "executed", out.text  # before: executed
            assert _executions(rt) == 0

            # the ledger agent's token: neither the addresses nor the other run's ids
            seen = json.dumps([get("/api/runs/evidence", ledger),
                               get("/api/runs?limit=100", ledger),
                               get("/api/runs/run:task-refund-jane-roe", ledger)])
            assert not any(ref in seen for ref in refs)
            # the run's id (the task's, here) still holds it; nothing else does
            assert "refund-jane-roe" not in seen.replace("run:task-refund-jane-roe", ""), seen

            # the approver and the run's own agent read them as before
            assert [e["subject"] for e in get("/api/runs/evidence", bob)["events"]] == refs
            own = get("/api/runs/run:task-refund-jane-roe", tester)
            assert own["proposals"] == ["refund-jane-roe"]
            assert "refund-jane-roe" in {e["subject"] for e in own["events"]}
    finally:
        rt.close()
