"""An approval's inbox item carries a bounded list of the evidence its proposal cites.

Finding (twenty-third review, the human doors): each ``approval`` item of ``GET /api/inbox``
(and of a run view's inbox, ``cradle-kg inbox --format json``) carried the asking
proposal's ``evidence_refs`` as written: up to ``max_evidence_refs`` (256) references of 71
characters, the same one as often as the agent liked, and none of them need exist when the
tool requires no evidence. ``test_341`` and ``test_361`` bounded each item's input and
action to a few KiB; the evidence list was left whole. One agent, within its waiting
quota, asked 200 approvals each citing 256 references: the approvers' default inbox read
(200 items) was 3,966,961 bytes, a page of 51 items 1,011,444 bytes.

Now: an item carries the distinct blobs cited (a ref cited twice is one item of evidence,
as gate 1 counts it: ``test_27``), at most ``inbox.MAX_ITEM_EVIDENCE`` of them, and
``evidence_total``, how many distinct blobs the proposal cites; the approval's own view
(``GET /api/approvals/{id}``, ``cradle-kg approvals show``) lists them all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.inbox import MAX_ITEM_EVIDENCE, inbox
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import OutcomeStatus

from ..inprocess import run_cli
from .homes import json_api

pytestmark = pytest.mark.usefixtures("journal_backend")

BOB = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}
REFS = ["sha256:" + format(i, "064x") for i in range(200)]


def _close(rt: Runtime, n: int, refs: list[str]) -> str:
    """A close of ``acct-n`` (irreversible: a person approves it) citing ``refs``."""
    out = rt.submit({"id": f"p{n}", "task_id": f"t{n}", "agent_id": AGENT, "run_id": f"r{n}",
                     "evidence_refs": refs,
                     "action": {"action_type": "demo.ledger.close_account",
                                "target": f"ledger:acct-{n}",
                                "arguments": {"account": f"acct-{n}"}}})
    assert out.status is OutcomeStatus.AWAITING_APPROVAL and out.approval is not None, out
    return out.approval.id


def test_an_approval_item_carries_a_bounded_list_of_distinct_evidence(
        ledger_home: Path) -> None:
    with Runtime(ledger_home, graph_sync=False) as rt:
        many = _close(rt, 1, [*REFS, *REFS[:56]])  # 256 references, 200 blobs
        same = _close(rt, 2, [REFS[0]] * 256)  # one blob, cited 256 times
        few = _close(rt, 3, REFS[:2])
        with json_api(rt) as api:
            response = api.get("/api/inbox?kind=approval", headers=BOB)
            assert response.status_code == 200, response.text
            items = {i["id"]: i for i in response.json()}
            whole = api.get(f"/api/approvals/{many}", headers=BOB).json()
        # before: 256 references, 18,707 bytes of JSON for the item
        assert len(json.dumps(items[many])) < 4096, len(json.dumps(items[many]))
        assert items[many]["evidence"] == REFS[:MAX_ITEM_EVIDENCE]
        assert items[many]["evidence_total"] == len(REFS)
        assert items[same]["evidence"] == [REFS[0]]  # before: the same ref 256 times
        assert items[same]["evidence_total"] == 1
        assert items[few]["evidence"] == REFS[:2] and items[few]["evidence_total"] == 2
        assert whole["evidence"] == REFS  # the approval's view: every blob cited, once
        # the command line's inbox is the same items
        assert inbox(rt, kinds=("approval",))[0].evidence == REFS[:MAX_ITEM_EVIDENCE]
    shown = run_cli("approvals", "show", many, "--home", str(ledger_home))
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["evidence"] == REFS
