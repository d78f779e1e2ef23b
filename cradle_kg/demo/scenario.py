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

Then the two pilot packs, loaded through the pack registry like any third-party pack
(the home's config names them, so every decision records ``pack-id@version``):

6. ``customs.hs-router`` (paper §11): the paper's UAV → ``needs_clarification`` with
   exactly its missing facts; a complete line → classified and filed (read back from the
   declarations store); a dual-use line → filing waits for a customs officer, who
   approves it;
7. ``infra.uptimeharbor`` (paper §12), on real processes: outage → fixes → tests as
   observations → staging → production under an explicit permit and a human approval →
   independent post-deploy verification → incident resolved; then a fix that only works
   in staging fails its post-deploy check in production and is rolled back by the
   runtime's compensation. Every service process is stopped at the end.

The demo identities' tokens are printed: they are demo tokens, in a demo home.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..canonical import token_hash
from ..config import Approver, Limit, RuntimeConfig, save_config
from ..loop.runtime import Runtime
from ..packs.loader import Pack
from ..packs.registry import PackRegistry
from ..records import Agent, Outcome, OutcomeStatus, Permission

AGENT = "agent:ledger-assistant"
REQUESTER = "user:alice"
APPROVER = "user:bob"
#: demo-only tokens; a real home gets its approvers' token hashes from its operators
DEMO_TOKENS = {APPROVER: "demo-token-bob", REQUESTER: "demo-token-alice"}
#: the pack whose tools the ledger steps call (``packs/demo.ledger``)
LEDGER_PACK = "demo.ledger"
#: the pilot packs the demo runs, through the same registry a third-party pack uses
PILOTS = ("customs.hs-router", "infra.uptimeharbor")
#: the paper's §11 example, exactly
PAPER_MISSING_FACTS = ("maximum_takeoff_weight", "maximum_range")


@dataclass(frozen=True)
class DemoStep:
    name: str
    expectation: str
    outcome: Outcome
    note: str
    #: a further condition of the step (e.g. the exact missing facts) besides its status
    holds: bool = True

    @property
    def ok(self) -> bool:
        return self.outcome.status.value == self.expectation and self.holds


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
        packs=(LEDGER_PACK,),
    )


def prepare_home(home: Path, *, fresh: bool = True,
                 config: RuntimeConfig | None = None) -> None:
    if fresh and home.exists():
        shutil.rmtree(home)
    (home / "policies").mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(__file__).parent / "policies" / "demo.cedar", home / "policies")
    save_config(home / "config.json", config if config is not None else demo_config())


def pilot_packs(home: Path) -> dict[str, Pack]:
    registry = PackRegistry.discover(home)
    return {ref: registry.get(ref) for ref in PILOTS}


def pilots_config(packs: dict[str, Pack]) -> RuntimeConfig:
    """The ledger demo's config plus each pilot's identities (from the pack's adapters),
    and the pilots named in ``packs`` so every runtime on the home loads them."""
    config = demo_config()
    for pack in packs.values():
        identities: Callable[[], RuntimeConfig] = pack.resolve("adapters:identities")
        merge: Callable[[RuntimeConfig, RuntimeConfig], RuntimeConfig] = pack.resolve(
            "adapters:merged")
        config = merge(config, identities())
    return config.model_copy(update={"packs": (LEDGER_PACK,
                                               *(p.ref for p in packs.values()))})


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


def run_demo(home: Path, *, pilots: bool = False) -> list[DemoStep]:
    """The ledger steps; with ``pilots`` (what ``cradle-kg demo`` runs) both pilot packs too.

    The default stays the ledger steps alone: the tests and benches that count its runs,
    actions and events were written against it; the pilots' own tests run them.
    """
    packs = pilot_packs(home) if pilots else {}
    prepare_home(home, config=pilots_config(packs) if pilots else None)
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
    if pilots:
        with Runtime(home) as rt:
            steps.extend(_customs_steps(rt, packs["customs.hs-router"]))
            steps.extend(_infra_steps(rt, packs["infra.uptimeharbor"]))
        leaked = service_processes(home)
        if leaked:
            raise RuntimeError(f"service processes outlived the demo: {leaked}")
    return steps


def _example_input(pack: Pack, prefix: str) -> dict[str, Any]:
    (path,) = (p for p in pack.example_files() if p.name.startswith(prefix))
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return dict(raw.get("input", raw))


def _customs_steps(rt: Runtime, pack: Pack) -> list[DemoStep]:
    line = pack.resolve("adapters:governed_line")
    approve = pack.resolve("adapters:approve_finalization")
    out: list[DemoStep] = []
    paper, clarify, _ = line(rt, {**_example_input(pack, "01_"), "task": "customs-paper-uav"})
    missing = tuple(clarify.decision.missing_facts) if clarify.decision else ()
    out.append(DemoStep("customs: paper §11 UAV", "needs_clarification", clarify,
                        "missing " + ", ".join(missing) + "; candidates "
                        + " ".join(paper["candidate_hs_codes"]),
                        holds=missing == PAPER_MISSING_FACTS))
    done, classified, filed = line(rt, {**_example_input(pack, "03_"),
                                        "task": "customs-quadcopter"})
    out.append(DemoStep("customs: complete line: classify", "executed", classified,
                        f"classified {done['hs_code']}: an observation"))
    if filed is not None:
        out.append(DemoStep("customs: finalize", "executed", filed,
                            f"filed {done['hs_code']}; read back, 3 pack verifiers"))
    dual, _, waiting = line(rt, {**_example_input(pack, "09_"), "task": "customs-dual-use"})
    if waiting is not None:
        out.append(DemoStep("customs: dual-use: finalize", "awaiting_approval", waiting,
                            "permits " + ", ".join(dual["permits_required"])
                            + ": `customs.hs-router/restricted-goods-routing`"))
        if waiting.status is OutcomeStatus.AWAITING_APPROVAL:
            out.append(DemoStep("customs: approved by customs officer", "executed",
                                approve(rt, waiting), "second identity; filing verified"))
    return out


def _infra_steps(rt: Runtime, pack: Pack) -> list[DemoStep]:
    scenario = pack.resolve("adapters:scenario")
    out: list[DemoStep] = []
    for variant, label, world in (("success", "infra", "demo-success"),
                                  ("staging_only_fix", "infra (rollback)", "demo-rollback")):
        result = scenario(rt, variant=variant, world=world)
        for step in result["steps"]:
            out.append(DemoStep(f"{label}: {step['step']}", step["expected"],
                                step["outcome_record"], step["note"] or _why(step)))
        final = result["incident_status"]
        out[-1] = DemoStep(out[-1].name, out[-1].expectation, out[-1].outcome,
                           f"{out[-1].note}; incident {final}, production runs "
                           f"`{result['production_commit']}`",
                           holds=final == ("resolved" if variant == "success" else "escalated"))
    return out


def _why(step: dict[str, Any]) -> str:
    if step["codes"] and step["outcome"] == "denied":
        return ", ".join(step["codes"])
    if step["policy_ids"]:
        return "permit " + ", ".join(step["policy_ids"])
    return ""


def service_processes(home: Path) -> list[int]:
    """Live processes whose command line mentions the home (a service left running)."""
    marker = str(home.resolve())
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(entry / "cwd")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        alive = not stat.split(") ", 1)[1].startswith("Z")
        if alive and "app.py" in cmd and (marker in cmd or cwd.startswith(marker)):
            found.append(int(entry.name))
    return found


def _executed_action_id(rt: Runtime, waiting: Outcome) -> str:
    for event in rt.journal.events(run_id=waiting.run_id):
        if event.kind == "action.intent":
            return event.subject
    raise RuntimeError("no action ran after the approval")


def demo_ledger(home: Path) -> Any:
    """The demo ledger of ``home`` — the ``demo.ledger`` pack's own ``Ledger`` — for reading
    back what the demo did (and for tests that tamper with it)."""
    ledger = PackRegistry.discover().get(LEDGER_PACK).resolve("ledger:Ledger")
    return ledger(ledger_for_path(home))


def ledger_for(rt: Runtime) -> Any:
    return demo_ledger(rt.home.root)


def ledger_entries(home: Path) -> dict[str, int]:
    entries: dict[str, int] = demo_ledger(home).entries_per_key()
    return entries


def ledger_for_path(home: Path) -> Path:
    return home / "demo-ledger" / "ledger.sqlite"


__all__ = ["DEMO_TOKENS", "LEDGER_PACK", "PILOTS", "DemoStep", "demo_ledger", "ledger_for",
           "pilots_config", "prepare_home", "run_demo", "service_processes"]
