"""A document collected for one run is no evidence in another.

Finding (left open by the twelfth attack review): evidence was bound to nothing — a
person's fresh upload, or a run's recorded request, counted for any proposal of any run
that cited its address. Bob uploaded the invoice and the receipt of case A for the agent
handling case A; an agent given those addresses (a hand-off, a shared note, a run it
reads: addresses are known to whoever was given them, ``test_185``) cited them in case B,
and its call asking for two documents executed unattended on case A's papers. A
customer's request recorded in run A (``cradle-kg input``) counted in run B likewise.

Now an upload may name the run it is evidence for (``POST /api/evidence?run=RUN``,
``cradle-kg evidence add --run RUN``; journaled as ``for_run``), and what is journaled in a
run (a run's recorded input, ``Runtime.add_evidence(run_id=RUN)``) is that run's: cited
from another run it does not count — ``evidence_other_run``, "collected for another run",
nothing executed (and not in ``context.evidence_count``). An upload naming no run counts in
any run, as before (the documented ``evidence add`` flow); the record of a blob says which
run each upload is for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg.canonical import sha256_bytes
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api

from ..inprocess import run_cli
from .test_27_evidence_counting import _call, _executions, _runtime

pytestmark = pytest.mark.usefixtures("journal_backend")

CASE_A, CASE_B = "run:task-p-case-a", "run:task-p-case-b"
PAPERS = (b"invoice 4471, case A", b"receipt 4471, case A")


def test_a_document_for_one_run_is_no_evidence_in_another(home: Path) -> None:
    rt = _runtime(home)
    try:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config,
                                                                 "agent:tester")}
        bob = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
        with json_api(rt) as client:
            def upload(text: bytes, run: str | None) -> str:
                answer = client.post("/api/evidence", content=text, headers=bob,
                                     params={"kind": "invoice",
                                             **({"run": run} if run else {})})
                assert answer.status_code == 200, answer.text
                return str(answer.json()["ref"])

            def submit(pid: str, refs: list[str], tool: str = "test.two_docs"
                       ) -> dict[str, Any]:
                answer = client.post("/api/proposals", json=_call(pid, tool, refs),
                                     headers=agent)
                assert answer.status_code == 200, answer.text
                return dict(answer.json())

            papers = [upload(text, CASE_A) for text in PAPERS]
            out = submit("p-case-b", papers)
            assert out["status"] != "executed", out  # before: executed
            assert out["decision"]["reason_codes"] == ["evidence_other_run"], out
            assert sum("collected for another run" in r
                       for r in out["decision"]["reasons"]) == 2, out
            out = submit("p-case-b-count", papers, tool="test.counted")  # evidence_count
            assert out["status"] == "denied", out  # before: executed
            assert _executions(rt) == 0
            out = submit("p-case-a", papers)  # the run they were collected for
            assert out["status"] == "executed", out
            assert _executions(rt) == 1

            # a run's recorded request is that run's too
            request = "please pay invoice 7 to acct-4"
            rt.record_input(CASE_A, request, author="user:emma")
            note = upload(b"statement: 7 paid once", None)
            out = submit("p-case-b-2", [sha256_bytes(request.encode()), note])
            assert out["status"] != "executed", out  # before: executed
            assert out["decision"]["reason_codes"] == ["evidence_other_run"], out

            # an upload naming no run counts in any run, as before
            any_run = [upload(text, None) for text in (b"invoice 9", b"receipt 9")]
            assert submit("p-case-b-3", any_run)["status"] == "executed"

            # the record of a blob says which run each upload is for
            shown = client.get(f"/api/evidence/{papers[0]}", headers=bob).json()
            assert [a["for_run"] for a in shown["added"]] == [CASE_A], shown
            shown = client.get(f"/api/evidence/{any_run[0]}", headers=bob).json()
            assert [a["for_run"] for a in shown["added"]] == [None], shown
        rt.home.root.joinpath("api-tokens.json").unlink()
    finally:
        rt.close()

    # the command line names the run the same way
    (home.parent / "doc").write_bytes(b"a delivery note, case B")
    res = run_cli("evidence", "add", str(home.parent / "doc"), "--as", APPROVER, "--run",
                  CASE_B, "--format", "json", "--home", str(home),
                  env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert res.returncode == 0, res.stderr
    rt = _runtime(home)
    try:
        last = [e for e in rt.journal.events() if e.kind == "evidence.collected"][-1]
        assert last.payload["for_run"] == CASE_B and last.actor == APPROVER
    finally:
        rt.close()
