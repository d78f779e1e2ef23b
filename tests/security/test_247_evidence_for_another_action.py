"""A document uploaded for one action is no evidence for another action of its run.

Finding (left open by ``test_199``): an upload could be bound to a run, and within the run
any proposal could cite it. Bob uploaded the customs certificate of shipment 4471 for the
agent handling the case; the agent cited it for shipment 4472 of the same run, and its
call asking for the certificate executed unattended on the other shipment's paper (and
counted in Cedar's ``context.evidence_count``).

Now an upload may also name the action it is evidence for — the key the agent pins on it
(``action.idempotency_key``): ``POST /api/evidence?action=KEY``, ``cradle-kg evidence add
--action KEY``, ``Runtime.add_evidence(for_action=KEY)``; journaled as ``for_action``. Cited
by a proposal whose action pins another key, or none, it does not count —
``evidence_other_action`` (clarify), "collected for another action", nothing executed, not
in ``evidence_count``. An upload naming no action counts for any action, as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

from ..inprocess import run_cli
from .test_27_evidence_counting import _call, _executions, _runtime

pytestmark = pytest.mark.usefixtures("journal_backend")

RUN = "run:task-ship"


def _keyed(pid: str, refs: list[str], key: str | None, tool: str = "test.two_docs"
           ) -> dict[str, Any]:
    call = _call(pid, tool, refs)
    call["task_id"] = "task-ship"
    if key is not None:
        call["action"]["idempotency_key"] = key  # type: ignore[index]
    return call


def test_a_document_for_one_action_is_no_evidence_for_another(home: Path) -> None:
    rt = _runtime(home)
    try:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config,
                                                                 "agent:tester")}
        bob = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
        with json_api(rt) as client:
            def upload(text: bytes, action: str | None) -> str:
                answer = client.post("/api/evidence", content=text, headers=bob,
                                     params={"kind": "certificate", "run": RUN,
                                             **({"action": action} if action else {})})
                assert answer.status_code == 200, answer.text
                assert answer.json()["action"] == action
                return str(answer.json()["ref"])

            def submit(call: dict[str, Any]) -> dict[str, Any]:
                answer = client.post("/api/proposals", json=call, headers=agent)
                assert answer.status_code == 200, answer.text
                return dict(answer.json())

            papers = [upload(b"certificate, shipment 4471", "shipment-4471"),
                      upload(b"packing list, shipment 4471", "shipment-4471")]
            out = submit(_keyed("p-4472", papers, "shipment-4472"))
            assert out["status"] != "executed", out  # before: executed
            assert out["decision"]["reason_codes"] == ["evidence_other_action"], out
            assert sum("collected for another action" in r
                       for r in out["decision"]["reasons"]) == 2, out
            out = submit(_keyed("p-nokey", papers, None))  # an action pinning no key
            assert out["decision"]["reason_codes"] == ["evidence_other_action"], out
            out = submit(_keyed("p-4472-count", papers, "shipment-4472", "test.counted"))
            assert out["status"] == "denied", out  # evidence_count: before, executed
            assert _executions(rt) == 0
            out = submit(_keyed("p-4471", papers, "shipment-4471"))  # the action named
            assert out["status"] == "executed", out
            assert _executions(rt) == 1

            # an upload naming no action counts for any action of its run, as before
            loose = [upload(b"invoice 9", None), upload(b"receipt 9", None)]
            assert submit(_keyed("p-any", loose, "shipment-9"))["status"] == "executed"

            # an empty action is refused, nothing written
            before = rt.journal.head()
            bad = client.post("/api/evidence", content=b"x", headers=bob,
                              params={"action": " "})
            assert bad.status_code == 422 and bad.json()["detail"]["error"] == "input_error"
            assert rt.journal.head() == before

            shown = client.get(f"/api/evidence/{papers[0]}", headers=bob).json()
            assert [a["for_action"] for a in shown["added"]] == ["shipment-4471"], shown
            shown = client.get(f"/api/evidence/{loose[0]}", headers=bob).json()
            assert [a["for_action"] for a in shown["added"]] == [None], shown

        # the library's door names the action the same way
        ref = rt.add_evidence(b"certificate, shipment 5", kind="certificate",
                              collector="user:alice", run_id=RUN, for_action="shipment-5")
        other = rt.add_evidence(b"packing list, shipment 5", kind="certificate",
                                collector="user:alice", run_id=RUN, for_action="shipment-5")
        out2 = rt.submit(_keyed("p-6", [ref, other], "shipment-6"))
        assert out2.decision is not None
        assert list(out2.decision.reason_codes) == ["evidence_other_action"], out2
        with pytest.raises(InputError):
            rt.add_evidence(b"y", kind="certificate", collector="user:alice",
                            for_action="")
        rt.home.root.joinpath("api-tokens.json").unlink()
    finally:
        rt.close()

    # the command line names the action the same way
    (home.parent / "doc").write_bytes(b"a certificate, shipment 7")
    res = run_cli("evidence", "add", str(home.parent / "doc"), "--as", APPROVER, "--run",
                  RUN, "--action", "shipment-7", "--format", "json", "--home", str(home),
                  env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert res.returncode == 0, res.stderr
    rt = _runtime(home)
    try:
        last = [e for e in rt.journal.events() if e.kind == "evidence.collected"][-1]
        assert last.payload["for_action"] == "shipment-7" and last.actor == APPROVER
    finally:
        rt.close()
