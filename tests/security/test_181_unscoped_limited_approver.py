"""An approver limited to scopes decides nothing asked within no scope.

Finding (twelfth attack review; left open by the eleventh): an approver's ``scopes`` in
``config.json`` are the scopes they "may approve within (`*` for all)". An approval or a
workflow's human step asked within a scope is decided only by who holds it (``test_30``,
``test_170``) — but one asked within *no* scope was decided by any approver, limited or
not. Carol, trusted with account closures only (``"scopes": ["account_closure"]``),
approved a credit of 800 that the operator's policy sends to a person without naming a
scope (``@requires_approval("true")``), and answered ``pay`` to ``credit-review``'s
review of a credit of 400 (its step names no scope): both credits were made. Naming her
own scope on the unscoped approval (``--scope account_closure``) passed too.
The home's pilots ship such approvers (the SRE on call, the customs compliance officer:
one scope each) beside the ledger's unscoped reviews.

Now an approver limited to scopes decides only what is asked within one of them; what is
asked within no scope is for an approver holding ``*`` (the default): anyone else is
refused (``ApprovalError``; ``approval.refused`` journaled for an approval, nothing for a
step), the item still waits, and an approver holding ``*`` decides it as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.errors import ApprovalError
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import ApprovalStatus, OutcomeStatus
from cradle_kg.workflow import runner

pytestmark = pytest.mark.usefixtures("journal_backend")

FLOW = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "credit-review.yaml"
CAROL = "user:carol"
BIG_CREDITS = """
@id("big-credits-need-a-person")
@requires_approval("true")
permit(principal, action == Action::"demo.ledger.credit", resource)
when { context.environment == "local" && context.arguments has amount
       && context.arguments.amount > 500 };
"""


def _home(home: Path) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers,
        Approver(id=CAROL, scopes=("account_closure",), token_hash=token_hash("carol")))}))
    (home / "policies" / "credits.cedar").write_text(BIG_CREDITS, encoding="utf-8")
    (home / "workflows").mkdir(exist_ok=True)
    (home / "workflows" / "credit-review.yaml").write_text(FLOW.read_text(encoding="utf-8"),
                                                           encoding="utf-8")


def _credit(pid: str) -> dict[str, object]:
    return {"id": pid, "task_id": "task-" + pid, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-4",
                       "arguments": {"account": "acct-4", "amount": 800}}}


def _intents(rt: Runtime, run: str) -> int:
    return sum(1 for e in rt.journal.events(run_id=run) if e.kind == "action.intent")


def test_a_limited_approver_cannot_approve_an_unscoped_approval(ledger_home: Path) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        out = rt.submit(_credit("p-big"))
        assert out.status is OutcomeStatus.AWAITING_APPROVAL and out.approval is not None
        assert out.approval.scope is None
        for named in (None, "account_closure"):
            with pytest.raises(ApprovalError, match="no scope"):  # before: executed
                rt.decide_approval(out.approval.id, approver_id=CAROL, token="carol",
                                   status=ApprovalStatus.APPROVED, scope=named)
        assert rt.approvals.get(out.approval.id).approval.status is ApprovalStatus.PENDING
        assert _intents(rt, out.run_id) == 0
        refused = [e for e in rt.journal.events(run_id=out.run_id)
                   if e.kind == "approval.refused"]
        assert len(refused) == 2
        _, done = rt.decide_approval(out.approval.id, approver_id=APPROVER,
                                     token=DEMO_TOKENS[APPROVER],
                                     status=ApprovalStatus.APPROVED)
        assert done is not None and done.status is OutcomeStatus.EXECUTED


def test_a_limited_approver_cannot_answer_an_unscoped_step(ledger_home: Path) -> None:
    _home(ledger_home)
    with Runtime(ledger_home, graph_sync=False) as rt:
        engine = runner.open_engine(rt)
        started = runner.start(engine, runner.find_definition(rt.home.root, "credit-review"),
                               {"account": "acct-5", "amount": 400, "reason": "refund"},
                               run_id="credit-u")
        assert started["status"] == "waiting_human", started
        before = [e.kind for e in rt.journal.events(run_id="credit-u")]
        with pytest.raises(ApprovalError, match="no scope"):  # before: completed
            runner.decide(rt, runner.open_engine(rt), "credit-u", "review", by=CAROL,
                          token="carol", answer="pay")
        assert [e.kind for e in rt.journal.events(run_id="credit-u")] == before
        done = runner.decide(rt, runner.open_engine(rt), "credit-u", "review", by=APPROVER,
                             token=DEMO_TOKENS[APPROVER], answer="pay")
        assert done["status"] == "completed", done
        assert _intents(rt, "credit-u") == 1
