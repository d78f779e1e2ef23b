"""Who collected a piece of evidence, and when, are read together, upload by upload.

Finding (the twenty-second review, provenance answers): an evidence blob is one node,
named by its content hash, and each upload of it added to that node its time
(``cradle:at``) and its uploader (``prov:wasAttributedTo``) as two separate triples.
``evidence-chain`` ("the evidence that proposal cited, when and by whom it was
collected") joined the two: a blob uploaded by ``kyc-service`` before the decision and
uploaded again, byte for byte, by agent ``mallory`` afterwards (``POST /api/evidence``,
any token) answered four rows — among them that mallory had collected it at
kyc-service's time, before the decision it supported, and kyc-service at mallory's.
Any identity could so put its name on any evidence it had seen, at the time that counted.

Now the query reads each upload's time and uploader from that upload's own audit record
(its ``evidence.collected`` event: ``cradle:at`` and ``cradle:actor`` of one event), so
each row is one upload as the journal has it. A real runtime on a temporary home, the
agent's token on the JSON API, the named query through ``cradle-kg query``.
"""

from __future__ import annotations

from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.graph.project import dt, identity

from .answers import answer
from .homes import json_api
from .mcp_http import MALLORY, token_for, two_agent_home

KYC = b'{"kyc": "passed", "account": "acct-3"}'


def test_each_upload_is_one_row_with_its_own_time_and_uploader(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    token = token_for(home, MALLORY)
    with Runtime(home) as rt:
        ref = rt.add_evidence(KYC, kind="kyc-report", collector="kyc-service")
        done = rt.submit({
            "id": "p-kyc", "task_id": "task-kyc", "run_id": "kyc", "agent_id": AGENT,
            "evidence_refs": [ref],
            "facts": [{"subject": "acct-3", "predicate": "kycStatus", "object": "passed",
                       "source": "kyc-service"}],
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-3",
                       "arguments": {"account": "acct-3", "amount": 5}}})
        assert done.status.value == "executed"
        with json_api(rt) as client:  # the same bytes, again, from mallory's token
            again = client.post("/api/evidence?kind=kyc-report", content=KYC,
                                headers={"Authorization": f"Bearer {token}"})
            assert again.status_code == 200, again.text
        uploads = {(dt(e.at.isoformat())[1:].split('"')[0], identity(e.actor)[1:-1])
                   for e in rt.journal.events(run_id="evidence")
                   if e.kind == "evidence.collected" and e.subject == ref}
    assert {who for _, who in uploads} == {identity("kyc-service")[1:-1],
                                           identity(MALLORY)[1:-1]}
    rows = answer(home, "evidence-chain", fact="kyc/p-kyc/0")
    # before: every time with every uploader — mallory at kyc-service's time too
    assert {(r["collectedAt"], r["collectedBy"]) for r in rows} == uploads, rows
