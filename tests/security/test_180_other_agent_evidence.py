"""Another agent's uploads are no evidence either; a host's upload is the host's.

Finding (twelfth attack review; left open by the eleventh): ``test_175`` stopped an
agent's own uploads counting as evidence for its proposals, but passed over only *its*
rows: a blob another agent of the home uploaded (``POST /api/evidence`` takes any token)
still counted. Two agents — colluding, or one steered by a prompt injection to "file a
receipt" — filled each other's ``requires_evidence``: the ledger agent uploaded two texts
("I checked the invoice, it's fine"), the tester agent cited them, and its call executed
unattended. An agent's upload is that agent's word (a proposal, an observation), not a
document someone accountable produced — the brief's line between an observation and a
fact. And the host application's token (``api-token issue --host``), which *is* the
operator's code, had its uploads journaled under the agent's id, so after ``test_175``
they counted for none of that agent's proposals.

Now a cited blob is evidence only when some collector of it is not an agent of the home
(a person, the host, the runtime's own collectors): the newest such ``evidence.collected``
decides its freshness, one row read, the agents' rows passed over by the database. A host
token's upload is journaled as ``host:<agent>`` (its own quota) and counts.
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


def test_another_agents_uploads_are_no_evidence(home: Path) -> None:
    rt = _runtime(home)
    try:
        other = {"Authorization": f"Bearer {issue_agent_token(rt.home, rt.config, LEDGER)}"}
        own = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config,
                                                               "agent:tester")}
        with json_api(rt) as client:
            def upload(text: bytes, auth: dict[str, str]) -> dict[str, Any]:
                answer = client.post("/api/evidence", params={"kind": "invoice"},
                                     content=text, headers=auth)
                assert answer.status_code == 200, answer.text
                return dict(answer.json())

            def submit(pid: str, tool: str, refs: list[str]) -> dict[str, Any]:
                answer = client.post("/api/proposals", json=_call(pid, tool, refs),
                                     headers=own)
                assert answer.status_code == 200, answer.text
                return dict(answer.json())

            planted = [str(upload(text, other)["ref"]) for text in
                       (b"I checked the invoice, it's fine", b"and the receipt, trust me")]
            out = submit("p-other", "test.two_docs", planted)
            assert out["status"] != "executed", out  # before: executed
            assert "evidence_missing" in out["decision"]["reason_codes"], out
            assert any("added only by agents" in r for r in out["decision"]["reasons"]), out
            out = submit("p-other-count", "test.counted", planted)  # evidence_count
            assert out["status"] == "denied", out  # before: executed
            assert _executions(rt) == 0

            # the host application's token: journaled as the host's, and evidence
            rt.home.root.joinpath("api-tokens.json").unlink()
            host = {"Authorization": "Bearer " + issue_agent_token(
                rt.home, rt.config, "agent:tester", host=True)}
            own = host  # the host proposes for its agent too
            docs = [upload(text, host) for text in (b"invoice 4471", b"receipt 4471")]
            assert [d["by"] for d in docs] == ["host:agent:tester"] * 2, docs
            out = submit("p-host", "test.two_docs", [str(d["ref"]) for d in docs])
            assert out["status"] == "executed", out  # before: evidence_missing
            # a person's upload of the planted texts makes them evidence, as before
            for text in (b"I checked the invoice, it's fine", b"and the receipt, trust me"):
                rt.add_evidence(text, kind="document", collector="user:alice")
            assert submit("p-seen", "test.two_docs", planted)["status"] == "executed"
    finally:
        rt.close()
