"""Another agent's host is no collector of evidence for this agent's proposals.

Finding (twentieth attack review): a host application's token (``api-token issue AGENT
--host``) uploads as ``host:<agent>``, and its upload is evidence (``test_180``) — for
*any* agent's proposal. ``test_259`` refuses a host's token an upload bound to a run of
another identity's namespace (``?run=run:agent:tester/…``: 403), but an upload naming no
run counts in every run (``test_248``), and one naming a run outside any namespace (a
workflow run, ``case-1``) counts there: the ledger agent's host (a chat front end, say,
filing what its user pasted) uploaded two texts, the tester agent cited them, and its
call that asks for two documents someone accountable produced executed unattended.

Now a host's upload counts for its own agent's proposals only: another agent's host is
passed over as another agent is (one more name in the database's ``NOT IN``), and the
reason says who added it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg.demo.scenario import AGENT as LEDGER
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

from .test_27_evidence_counting import _call, _executions, _runtime

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_another_agents_host_gives_no_evidence(home: Path) -> None:
    rt = _runtime(home)
    try:
        host_of_other = {"Authorization": "Bearer " + issue_agent_token(
            rt.home, rt.config, LEDGER, host=True)}
        with json_api(rt) as client:
            def upload(text: bytes, auth: dict[str, str], **params: str) -> str:
                answer = client.post("/api/evidence", params={"kind": "invoice", **params},
                                     content=text, headers=auth)
                assert answer.status_code == 200, answer.text
                return str(answer.json()["ref"])

            def submit(pid: str, refs: list[str], auth: dict[str, str],
                       **extra: Any) -> dict[str, Any]:
                answer = client.post("/api/proposals", headers=auth,
                                     json={**_call(pid, "test.two_docs", refs), **extra})
                assert answer.status_code == 200, answer.text
                return dict(answer.json())

            unbound = [upload(t, host_of_other) for t in (b"invoice 4471", b"receipt 4471")]
            bound = [upload(t, host_of_other, run="case-1")
                     for t in (b"invoice 4472", b"receipt 4472")]
            rt.home.root.joinpath("api-tokens.json").unlink()
            tester = {"Authorization": "Bearer " + issue_agent_token(
                rt.home, rt.config, "agent:tester")}
            out = submit("p-unbound", unbound, tester)
            assert out["status"] != "executed", out  # before: executed
            assert "evidence_missing" in out["decision"]["reason_codes"], out
            assert any("another agent's host" in r for r in out["decision"]["reasons"]), out
            out = submit("p-bound", bound, tester, run_id="case-1")
            assert out["status"] != "executed", out  # before: executed
            assert _executions(rt) == 0

            # the tester's own host gives evidence for its agent, as before (test_180)
            own_host = {"Authorization": "Bearer " + issue_agent_token(
                rt.home, rt.config, "agent:tester", host=True)}
            tester = own_host  # one token an agent: the host proposes for its agent too
            mine = [upload(t, own_host) for t in (b"invoice 4473", b"receipt 4473")]
            assert submit("p-own-host", mine, tester)["status"] == "executed"
            # and another host's blob uploaded again by the tester's host counts
            again = [upload(t, own_host) for t in (b"invoice 4471", b"receipt 4471")]
            assert again == unbound
            assert submit("p-again", unbound, tester)["status"] == "executed"
    finally:
        rt.close()
