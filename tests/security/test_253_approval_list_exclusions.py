"""The approvals listed to an approver are not offered as theirs when they may not decide.

Finding (left open by ``test_215``): the inbox left out, for an approver holding ``*``,
the approvals they are excluded from deciding, but ``GET /api/approvals?pending=true`` and
``cradle-kg approvals list --pending`` still listed them: in the demo home Alice, whom the
ledger agent acts for, was offered her own agent's credit among the approvals waiting, and
refused when she answered it.

Now an approver's pending view leaves them out in its query (the derived
``approval_exclusions``, as the inbox); the whole history keeps them, each approval
saying whether it is the approver's to decide (``decidable``) and why not (``why_not``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS, REQUESTER
from tests.security.homes import json_api

from ..inprocess import run_cli
from .test_181_unscoped_limited_approver import _credit
from .test_215_inbox_of_an_excluded_approver import CLERK, _home

pytestmark = pytest.mark.usefixtures("journal_backend")


def _listed(rt: Runtime, who: str, **params: Any) -> list[dict[str, Any]]:
    with json_api(rt) as client:
        answer = client.get("/api/approvals", params=params,
                            headers={"Authorization": f"Bearer {DEMO_TOKENS[who]}"})
        assert answer.status_code == 200, answer.text
        return list(answer.json())


def _cli(home: Path, *args: str) -> list[dict[str, Any]]:
    res = run_cli("approvals", "list", *args, "--format", "json", "--home", str(home))
    assert res.returncode == 0, res.stderr
    return list(json.loads(res.stdout))


def test_an_approver_is_not_offered_what_they_may_not_decide(ledger_home: Path) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        mine = rt.submit(_credit("p-big")).approval  # the ledger agent's: Alice excluded
        clerks = rt.submit({**_credit("p-clerk"), "agent_id": CLERK}).approval
        assert mine is not None and clerks is not None
        # the pending view, as the inbox: hers to decide only (before: both)
        assert [a["id"] for a in _listed(rt, REQUESTER, pending=True)] == [clerks.id]
        assert [a["id"] for a in _listed(rt, REQUESTER, pending=True, offset=0,
                                         limit=1)] == [clerks.id]
        assert [a["id"] for a in _listed(rt, APPROVER, pending=True)] == [mine.id, clerks.id]
        # the history keeps both, saying which is hers
        shown = {a["id"]: (a["decidable"], a["why_not"]) for a in _listed(rt, REQUESTER)}
        assert shown == {mine.id: (False, "excluded"), clerks.id: (True, None)}

    # the command line: `--as` an approver is their view; the operator's, everything
    assert [a["id"] for a in _cli(ledger_home, "--pending", "--as", REQUESTER)] == [clerks.id]
    listed = _cli(ledger_home, "--as", REQUESTER)
    assert [(a["id"], a["decidable"], a["why_not"]) for a in listed] == [
        (mine.id, False, "excluded"), (clerks.id, True, None)]
    assert [a["id"] for a in _cli(ledger_home, "--pending")] == [mine.id, clerks.id]
    res = run_cli("approvals", "list", "--as", "user:nobody", "--home", str(ledger_home))
    assert res.returncode != 0 and "not an approver" in res.stderr
