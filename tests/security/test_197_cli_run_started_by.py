"""A run a person starts on the command line records them, as one started over the API.

Finding (left open by the twelfth attack review): ``test_177`` … ``test_179`` keep whoever
started a workflow run from answering its human steps, approving the approvals it asks for
and closing its tasks — but ``started_by`` was recorded only for runs started over
``POST /api/workflows/{name}/runs``. ``cradle-kg workflow run`` recorded no one, whoever
ran it: Bob, his token in ``$CRADLE_APPROVER_TOKEN`` as the README's shell block sets it,
started ``credit-review`` for a credit of 900 to an account of his choosing and answered its
review ``pay`` with the same token (``step decide --as user:bob``) — the credit was made,
the request and its four-eyes review by one person.

Now ``workflow run`` records the person starting it: ``--as`` an approver with their token
(checked by the code ``evidence add --as`` and ``input --as`` use), or, without ``--as``,
the approver the token given (``--token`` / ``$CRADLE_APPROVER_TOKEN``) authenticates. A
wrong token, or ``--as`` a person without theirs, is refused (exit 1) before the run starts.
With no token the run is the operator's and records no one, as before. The page starts no
runs (it uses the JSON API); in process, ``Engine.start(…, started_by=…)`` records one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.loop.runtime import Runtime
from tests.security.homes import add_approver

from ..inprocess import run_cli

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "credit-review.yaml"
CAROL = "user:carol"
TOKENS = {APPROVER: DEMO_TOKENS[APPROVER], CAROL: "carol-token"}
INPUT = json.dumps({"account": "acct-5", "amount": 900, "reason": "refund"})


def _events(home: Path, run: str) -> list[tuple[str, dict[str, object]]]:
    with Runtime(home, graph_sync=False) as rt:
        return [(e.kind, dict(e.payload)) for e in rt.journal.events(run_id=run)]


def _run(home: Path, run: str, *extra: str, token: str | None) -> tuple[int, str]:
    res = run_cli("workflow", "run", "credit-review", "--run", run, "--input", INPUT,
                  *extra, "--home", str(home), env={"CRADLE_APPROVER_TOKEN": token})
    return res.returncode, res.stdout + res.stderr


def _decide(home: Path, run: str, who: str) -> tuple[int, str]:
    res = run_cli("step", "decide", run, "review", "--as", who, "--answer", "pay",
                  "--home", str(home), env={"CRADLE_APPROVER_TOKEN": TOKENS[who]})
    return res.returncode, res.stdout + res.stderr


def test_who_starts_a_run_on_the_command_line_does_not_review_it(ledger_home: Path) -> None:
    add_approver(ledger_home, CAROL, TOKENS[CAROL])
    (ledger_home / "workflows").mkdir(exist_ok=True)
    (ledger_home / "workflows" / "credit-review.yaml").write_bytes(FLOW.read_bytes())

    code, out = _run(ledger_home, "bobs-credit", token=TOKENS[APPROVER])
    assert code == 0 and "waiting" in out, out
    before = _events(ledger_home, "bobs-credit")
    code, out = _decide(ledger_home, "bobs-credit", APPROVER)
    assert code == 1, out  # before: 0, completed, the credit made
    assert APPROVER in out and "Traceback" not in out, out
    assert _events(ledger_home, "bobs-credit") == before  # the step still waits
    code, out = _decide(ledger_home, "bobs-credit", CAROL)
    assert code == 0 and "completed" in out, out
    kinds = [k for k, _ in _events(ledger_home, "bobs-credit")]
    assert "action.intent" in kinds
    started = next(p for k, p in before if k == "workflow.started")
    assert started["started_by"] == APPROVER

    # --as names the starter: with their token only; a token of no approver is refused
    for extra, token in ((("--as", APPROVER), None), (("--as", APPROVER), "not-bobs-token"),
                         (("--as", APPROVER), TOKENS[CAROL]), ((), "nobodys-token")):
        code, out = _run(ledger_home, "refused", *extra, token=token)
        assert code == 1, (extra, token, out)
        assert "token" in out and "Traceback" not in out, out
    assert _events(ledger_home, "refused") == []  # nothing started
    code, out = _run(ledger_home, "carols", "--as", CAROL, token=TOKENS[CAROL])
    assert code == 0, out
    assert next(p for k, p in _events(ledger_home, "carols")
                if k == "workflow.started")["started_by"] == CAROL
    code, out = _decide(ledger_home, "carols", CAROL)
    assert code == 1, out

    # no token: the operator's run, recorded as no one's, as before
    code, out = _run(ledger_home, "operators", token=None)
    assert code == 0, out
    assert "started_by" not in next(p for k, p in _events(ledger_home, "operators")
                                    if k == "workflow.started")
    code, out = _decide(ledger_home, "operators", APPROVER)
    assert code == 0 and "completed" in out, out
