"""Item 6: identity comes from configuration, not from the proposal.

Attacks reproduced: a proposal naming another ``tenant`` to escape a tenant rate limit
(and to change what Cedar sees); an agent pinning, on its own tool, the idempotency key
another agent's credit will derive; a target that disagrees with the arguments
(``target: ledger:acct-1``, ``account: acct-h``); ``approvals show --as X`` journaling a
view under X without X's token.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.config import Limit, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, demo_config, ledger_for
from cradle_kg.records import Agent, OutcomeStatus, Permission
from tests.conftest import make_config, register_test_tools
from tests.inprocess import run_cli

# the journal on each backend (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

OTHER = "agent:harbor-monitor"


def credit(pid: str, amount: int = 5, *, account: str = "acct-1", target: str | None = None,
           agent: str = AGENT, **extra: Any) -> dict[str, Any]:
    action = {"action_type": "demo.ledger.credit", "target": target or "ledger:" + account,
              "arguments": {"account": account, "amount": amount}}
    action.update(extra.pop("action", {}))
    return {"id": pid, "task_id": extra.pop("task_id", "task-" + pid), "agent_id": agent,
            "action": action, **extra}


def _config(**overrides: Any) -> Any:
    base = make_config()
    agents = (*base.agents, Agent(id=OTHER, permitted_scopes=("ledger:write",)))
    perms = (*base.permissions, Permission(subject=OTHER, action_type="test.*",
                                           resource_selector="test:*"),
             Permission(subject=OTHER, action_type="demo.ledger.credit",
                        resource_selector="ledger:*"))
    return base.model_copy(update={"agents": agents, "permissions": perms, **overrides})


@pytest.fixture
def irt(home: Path) -> Iterator[Runtime]:
    runtime = Runtime(home, config=_config(limits=(
        Limit(scope="tenant", subject="default", window_seconds=3600, max_calls=3),)))
    register_test_tools(runtime)
    yield runtime
    runtime.close()


def test_a_proposal_cannot_escape_its_tenant_rate_limit(irt: Runtime) -> None:
    for i in range(3):
        assert irt.submit(credit(f"p{i}")).status is OutcomeStatus.EXECUTED
    assert irt.submit(credit("p3")).status is OutcomeStatus.DENIED
    for claimed in ("someone-else", "", "default "):
        out = irt.submit(credit(f"p-escape-{claimed!r}", tenant=claimed))
        assert out.status is OutcomeStatus.DENIED, claimed
        assert out.decision is not None and "tenant_mismatch" in out.decision.reason_codes
    assert ledger_for(irt).balance("acct-1") == 15


def test_the_configured_tenant_is_what_limits_and_policies_see(irt: Runtime) -> None:
    out = irt.submit(credit("p-same", tenant="default"))  # the configured one: accepted
    assert out.status is OutcomeStatus.EXECUTED
    intents = irt.journal.events_of_kind("action.intent")
    assert [e.payload["tenant"] for e in intents] == ["default"]


def _derived_key_of(home: Path, proposal: dict[str, Any]) -> str:
    """What key the runtime derives for ``proposal`` (it is predictable: no secret)."""
    scratch = home.parent / "scratch"
    from cradle_kg.demo.scenario import prepare_home
    from cradle_kg.storage import JOURNAL_URL_ENV

    prepare_home(scratch)
    with pytest.MonkeyPatch.context() as env:  # a journal of its own, not the test's
        env.delenv(JOURNAL_URL_ENV, raising=False)
        with Runtime(scratch, config=_config()) as rt:
            out = rt.submit(proposal)
            assert out.action is not None
            return out.action.idempotency_key or ""


def test_an_agent_cannot_pin_another_agents_derived_key(irt: Runtime, home: Path) -> None:
    victim = credit("p-victim", 7)
    key = _derived_key_of(home, victim)
    attack = {"id": "p-pin", "task_id": "t-pin", "agent_id": OTHER,
              "action": {"action_type": "test.verifier_raises", "target": "test:1",
                         "arguments": {"value": "x"}, "idempotency_key": key}}
    pinned = irt.submit(attack)
    assert pinned.status is not OutcomeStatus.EXECUTED
    assert pinned.decision is not None
    assert "idempotency_key_reserved" in pinned.decision.reason_codes
    out = irt.submit(victim)
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert ledger_for(irt).balance("acct-1") == 7


@pytest.mark.parametrize("prefix", ["idem:", "key:", "proposal:", "approval-once:",
                                    "run-claim:", "approval-revoke:",
                                    "approval-decision:"])
def test_keys_in_the_runtimes_namespace_are_refused(irt: Runtime, prefix: str) -> None:
    out = irt.submit(credit("p-ns", action={"idempotency_key": prefix + "0" * 32}))
    assert out.decision is not None and "idempotency_key_reserved" in out.decision.reason_codes
    assert ledger_for(irt).balance("acct-1") == 0


def test_a_chosen_key_is_scoped_to_agent_and_tool(irt: Runtime) -> None:
    # the other agent takes key "k1" first, on the same tool: the victim's "k1" is its own
    first = irt.submit(credit("p-o", 3, agent=OTHER, action={"idempotency_key": "k1"}))
    assert first.status is OutcomeStatus.EXECUTED, first.reasons
    mine = irt.submit(credit("p-m", 4, action={"idempotency_key": "k1"}))
    assert mine.status is OutcomeStatus.EXECUTED, mine.reasons
    assert ledger_for(irt).balance("acct-1") == 7
    # and the same agent repeating its own key is still the idempotent replay
    again = irt.submit(credit("p-m2", 4, action={"idempotency_key": "k1"}))
    assert again.status is OutcomeStatus.EXECUTED and again.replayed
    assert ledger_for(irt).balance("acct-1") == 7


@pytest.mark.parametrize(("target", "account"), [
    ("ledger:acct-1", "acct-h"),
    ("ledger:*", "acct-h"),
    ("ledger:acct-h ", "acct-h"),
    ("LEDGER:acct-h", "acct-h"),
    ("ledger:acct-h/x", "acct-h"),
])
def test_a_target_that_disagrees_with_the_arguments_is_refused(
        irt: Runtime, target: str, account: str) -> None:
    out = irt.submit(credit("p-t", 9, account=account, target=target))
    assert out.status is OutcomeStatus.DENIED
    assert out.decision is not None and "target_mismatch" in out.decision.reason_codes
    assert ledger_for(irt).balance(account) == 0
    assert not irt.journal.events_of_kind("action.intent")


def test_glob_characters_in_arguments_match_only_themselves() -> None:
    # an argument made of glob characters cannot turn the target template into a wildcard:
    # a contract whose input accepts any string, so the input schema cannot be what refuses
    from pydantic import BaseModel

    from cradle_kg import ToolSpec
    from cradle_kg.records import IdempotencyClass, SideEffectClass

    class Free(BaseModel):
        account: str

    spec = ToolSpec(id="t.close", version="1", input_model=Free, output_model=Free,
                    verifier="v", side_effect_class=SideEffectClass.REVERSIBLE,
                    idempotency=IdempotencyClass.NATURAL, target_from="ledger:{account}")
    for wild in ("acct-?", "*", "acct-[0-9]", "a*"):
        args = Free(account=wild)
        assert spec.target_problem("ledger:acct-1", args) is not None, wild
        assert spec.target_problem(f"ledger:{wild}", args) is None, wild


def test_side_effecting_tools_must_declare_their_target() -> None:
    from pydantic import BaseModel

    from cradle_kg import ToolSpec
    from cradle_kg.errors import InputError
    from cradle_kg.records import IdempotencyClass, SideEffectClass
    from cradle_kg.tools import ToolRegistry

    class A(BaseModel):
        x: str

    with pytest.raises(InputError, match="target_from"):
        ToolRegistry().register(ToolSpec(
            id="t.w", version="1", input_model=A, output_model=A, verifier="v",
            side_effect_class=SideEffectClass.REVERSIBLE,
            idempotency=IdempotencyClass.NATURAL), lambda call: {"x": "1"})


def _cli(home: Path, *args: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (tests/inprocess), with no approver token unless given."""
    full: dict[str, str | None] = {"CRADLE_APPROVER_TOKEN": None, **(env or {})}
    return run_cli(*args, "--home", str(home), env=full)


def test_approvals_show_as_x_authenticates_x(home: Path) -> None:
    save_config(home / "config.json", demo_config())
    with Runtime(home) as rt:
        out = rt.submit({"id": "p-c", "task_id": "t-c", "agent_id": AGENT, "action": {
            "action_type": "demo.ledger.close_account", "target": "ledger:acct-1",
            "arguments": {"account": "acct-1"}}})
        assert out.approval is not None
        aid = out.approval.id
    refused = _cli(home, "approvals", "show", aid, "--as", APPROVER)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    wrong = _cli(home, "approvals", "show", aid, "--as", APPROVER, "--token", "guess")
    assert wrong.returncode == 1 and "Traceback" not in wrong.stderr
    anonymous = _cli(home, "approvals", "show", aid)
    assert anonymous.returncode == 0, anonymous.stderr
    with Runtime(home) as rt:
        assert rt.journal.events_of_kind("approval.viewed") == []
    ok = _cli(home, "approvals", "show", aid, "--as", APPROVER,
              env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS[APPROVER]})
    assert ok.returncode == 0, ok.stderr
    with Runtime(home) as rt:
        assert [e.actor for e in rt.journal.events_of_kind("approval.viewed")] == [APPROVER]
