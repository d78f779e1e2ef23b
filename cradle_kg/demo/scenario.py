"""``cradle-kg demo``: the governed loop end to end, on the embedded default.

Five moments, each one of the paper's separations made visible:

1. a credit is allowed, executed through the gateway and verified from the ledger;
2. a credit above the limit is denied by a Cedar policy — nothing runs;
3. a buggy tool reports success but wrote nothing — gate 2 returns a failure;
4. the first proposal is submitted again — same idempotency key, the recorded outcome
   comes back and the ledger still has one entry;
5. closing an account is irreversible — it waits for a human, a second identity
   approves it from the CLI (a real ``cradle-kg approvals approve`` process), and the
   run continues by itself: executed and verified.

The demo identities' tokens are printed: they are demo tokens, in a demo home.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..approvals import token_hash
from ..config import Approver, Limit, RuntimeConfig, save_config
from ..records import Agent, Outcome, Permission
from ..runtime import Runtime
from .ledger import Ledger
from .tools import ledger_for

AGENT = "agent:ledger-assistant"
REQUESTER = "user:alice"
APPROVER = "user:bob"
#: demo-only tokens; a real home gets its approvers' token hashes from its operators
DEMO_TOKENS = {APPROVER: "demo-token-bob", REQUESTER: "demo-token-alice"}
PLUGIN = "cradle_kg.demo.tools:register"


@dataclass(frozen=True)
class DemoStep:
    name: str
    expectation: str
    outcome: Outcome
    note: str


def demo_config() -> RuntimeConfig:
    return RuntimeConfig(
        agents=(Agent(id=AGENT, role="assistant", acts_for=REQUESTER,
                      permitted_scopes=("ledger:read", "ledger:write", "ledger:admin")),),
        permissions=(Permission(subject=AGENT, action_type="demo.ledger.*",
                                resource_selector="ledger:*"),),
        approvers=(Approver(id=APPROVER, role="ledger-supervisor",
                            token_hash=token_hash(DEMO_TOKENS[APPROVER])),
                   Approver(id=REQUESTER, role="account-owner",
                            token_hash=token_hash(DEMO_TOKENS[REQUESTER]))),
        limits=(Limit(scope="agent", window_seconds=60, max_calls=1000),),
        plugins=(PLUGIN,),
    )


def prepare_home(home: Path, *, fresh: bool = True) -> None:
    if fresh and home.exists():
        shutil.rmtree(home)
    (home / "policies").mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).parent / "policies" / "demo.cedar", home / "policies")
    save_config(home / "config.json", demo_config())


def _proposal(pid: str, tool: str, arguments: dict[str, Any], *, task: str) -> dict[str, Any]:
    return {"id": pid, "task_id": task, "agent_id": AGENT,
            "action": {"action_type": tool, "target": "ledger:" + arguments["account"],
                       "arguments": arguments}}


def _approve_from_cli(home: Path, approval_id: str) -> str:
    """Approve as a second identity, through the real command line."""
    env = dict(os.environ, CRADLE_APPROVER_TOKEN=DEMO_TOKENS[APPROVER])
    done = subprocess.run(
        [sys.executable, "-m", "cradle_kg", "approvals", "approve", approval_id,
         "--as", APPROVER, "--once", "--home", str(home)],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the approval command failed: {done.stderr.strip()}")
    return done.stdout


def run_demo(home: Path) -> list[DemoStep]:
    prepare_home(home)
    steps: list[DemoStep] = []
    with Runtime(home) as rt:
        first = _proposal("p-credit-250", "demo.ledger.credit",
                          {"account": "acct-1", "amount": 250}, task="task-credit")
        steps.append(DemoStep("allowed credit", "executed", rt.submit(first),
                              "verified by reading the ledger back"))
        steps.append(DemoStep("credit above the limit", "denied", rt.submit(_proposal(
            "p-credit-5000", "demo.ledger.credit", {"account": "acct-1", "amount": 5000},
            task="task-big-credit")), "forbidden by policy `demo-credit-limit`"))
        steps.append(DemoStep("tool lies about success", "verification_failed",
                              rt.submit(_proposal("p-credit-lie", "demo.ledger.credit_unreliable",
                                                  {"account": "acct-2", "amount": 40},
                                                  task="task-lie")),
                              "the tool said ok; the ledger says otherwise"))
        steps.append(DemoStep("same proposal again", "executed", rt.submit(first),
                              "same idempotency key: recorded outcome, no second effect"))
        close = _proposal("p-close-acct-9", "demo.ledger.close_account", {"account": "acct-9"},
                          task="task-close")
        waiting = rt.submit(close)
        steps.append(DemoStep("irreversible close", "awaiting_approval", waiting,
                              "needs a human: approval requested"))
    assert waiting.approval is not None
    _approve_from_cli(home, waiting.approval.id)
    with Runtime(home) as rt:
        after = rt.recorded_outcome(_executed_action_id(rt, waiting))
        if after is None:
            raise RuntimeError("the approved action did not run")
        steps.append(DemoStep("approved by user:bob (CLI)", "executed", after,
                              "second identity approved once; the run continued by itself"))
    return steps


def _executed_action_id(rt: Runtime, waiting: Outcome) -> str:
    for event in rt.journal.events(run_id=waiting.run_id):
        if event.kind == "action.intent":
            return event.subject
    raise RuntimeError("no action ran after the approval")


def ledger_entries(home: Path) -> dict[str, int]:
    return Ledger(ledger_for_path(home)).entries_per_key()


def ledger_for_path(home: Path) -> Path:
    return home / "demo-ledger" / "ledger.sqlite"


__all__ = ["DEMO_TOKENS", "DemoStep", "ledger_for", "prepare_home", "run_demo"]
