"""An empty approval scope is refused, not taken for a reusable approval.

Finding (twenty-fifth review, the JSON API's write doors): an approval is single-use
unless the person gives a scope or an expiry (``POST /api/approvals/{id}/approve``'s
``once`` defaults to "yes, unless a scope or an expiry is given"; ``approvals approve``
likewise). ``{"scope": ""}`` — what a client sends for an empty scope field — counted as
a scope given: the approval was recorded reusable (``once: false``) with no expiry, and
within the scope the request was asked within (an empty scope is "none" when it is
checked). The person decided an approve-once in every way they could see, and the record
says the action may run again and again in its run without asking anyone. ``--scope ""``
on the command line did the same.

Now a scope that is empty (or only blanks) is refused where every decision passes
(``ApprovalFlow.decide``): 422 ``input_error`` over HTTP, exit 2 on the command line,
nothing journaled, the approval still pending; a decision without a scope is single-use,
and one with a scope reusable, as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from tests.inprocess import run_cli

from ..server.conftest import close_proposal
from .homes import json_api, opened_demo_home

AUTH = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


@pytest.fixture
def waiting(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    home = opened_demo_home(tmp_path_factory, "t501")
    with Runtime(home) as rt:
        out = rt.submit(close_proposal("acct-7"))
    assert out.approval is not None
    return home, out.approval.id


@pytest.mark.parametrize("scope", ["", "  "])
def test_the_api_refuses_an_empty_scope(waiting: tuple[Path, str], scope: str) -> None:
    home, approval = waiting
    with Runtime(home) as rt, json_api(rt) as client:
        before = rt.journal.head()
        r = client.post(f"/api/approvals/{approval}/approve", json={"scope": scope},
                        headers=AUTH)
        # before: 200, the approval recorded reusable with no expiry
        assert r.status_code == 422, r.text
        assert r.json()["detail"]["error"] == "input_error", r.text
        assert "`scope`" in r.json()["detail"]["message"], r.text
        assert rt.journal.head() == before  # nothing journaled
        assert rt.approvals.get(approval).approval.status == "pending"
        # left out, it is an approve-once, as before
        done = client.post(f"/api/approvals/{approval}/approve", json={}, headers=AUTH)
        assert done.status_code == 200, done.text
        assert done.json()["approval"]["once"] is True


def test_the_cli_refuses_an_empty_scope(waiting: tuple[Path, str]) -> None:
    home, approval = waiting
    with Runtime(home) as rt:
        before = rt.journal.head()
    res = run_cli("approvals", "approve", approval, "--as", APPROVER, "--scope", "",
                  "--home", str(home), env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    said = res.stdout + res.stderr
    assert res.returncode == 2, said  # before: 0, approved reusable
    assert "`scope`" in said and "Traceback" not in said, said
    with Runtime(home) as rt:
        assert rt.journal.head() == before
    # a scope named is a reusable approval within it, as before
    res = run_cli("approvals", "approve", approval, "--as", APPROVER, "--scope",
                  "account_closure", "--home", str(home),
                  env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert res.returncode == 0, res.stdout + res.stderr
    with Runtime(home) as rt:
        decided = rt.approvals.get(approval).approval
    assert (decided.status, decided.once, decided.scope) == ("approved", False,
                                                              "account_closure")
