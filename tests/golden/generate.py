"""Generate the golden journals: ``python -m tests.golden.generate``.

Each golden is a folder: ``journal.jsonl`` (one event per line, with its hash),
``config.json`` and ``evidence.json`` (the blobs the journal refers to, e.g. policy
texts). They are generated on a fixed clock, so regenerating gives the same bytes —
``tests/workflow/test_golden.py`` regenerates them and compares.

What is pinned and why:

* time — a stepping clock (one second per reading): the runtime's, which the
  ``demo.ledger`` pack's ledger and verifiers read too (a pack's context carries it);
* the worker id journaled with intents (random per process otherwise);
* policy file names — the policy set is built from ``demo.cedar`` by name, because a
  home's policies are named by their absolute path, which depends on where it lives;
* recorded package versions — only cradle-kg's own, so upgrading a dependency does not
  rewrite the goldens.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import cradle_kg
from cradle_kg import Runtime
from cradle_kg.canonical import canonical_json, parse_iso
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS, prepare_home
from cradle_kg.evidence import EvidenceStore
from cradle_kg.home import Home
from cradle_kg.policy import PolicyEngine
from cradle_kg.policy.cedar import PolicySource
from cradle_kg.records import ApprovalStatus
from cradle_kg.storage import NewEvent, open_home_journal
from cradle_kg.workflow import Budget, BudgetBook, Engine, RecordedClient
from cradle_kg.workflow.examples import invoice_triage

GOLDEN = Path(__file__).parent
DEMO_POLICY = Path(cradle_kg.__file__).parent / "demo" / "policies" / "demo.cedar"
START = datetime(2026, 1, 1, tzinfo=UTC)


class SteppingClock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@contextmanager
def pinned_runtime(home: Path) -> Iterator[Runtime]:
    rt = Runtime(home, clock=SteppingClock(), graph_sync=False)
    rt.lease.id = "w-golden0000000000"
    rt.policies = PolicyEngine([PolicySource("demo.cedar", DEMO_POLICY.read_text())])
    try:
        yield rt
    finally:
        rt.close()


def _proposal(pid: str, tool: str, arguments: dict[str, Any], task: str) -> dict[str, Any]:
    return {"id": pid, "task_id": task, "agent_id": AGENT,
            "action": {"action_type": tool, "target": "ledger:" + arguments["account"],
                       "arguments": arguments}}


def demo(home: Path) -> None:
    """The five moments of ``cradle-kg demo``, the approval given in process."""
    prepare_home(home)
    with pinned_runtime(home) as rt:
        first = _proposal("p-credit-250", "demo.ledger.credit",
                          {"account": "acct-1", "amount": 250}, "task-credit")
        rt.submit(first)
        rt.submit(_proposal("p-credit-5000", "demo.ledger.credit",
                            {"account": "acct-1", "amount": 5000}, "task-big-credit"))
        rt.submit(_proposal("p-credit-lie", "demo.ledger.credit_unreliable",
                            {"account": "acct-2", "amount": 40}, "task-lie"))
        rt.submit(first)
        waiting = rt.submit(_proposal("p-close-acct-9", "demo.ledger.close_account",
                                      {"account": "acct-9"}, "task-close"))
        assert waiting.approval is not None
        rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED)


MESSAGES = [
    {"sender": "billing@acme.test", "subject": "Invoice 42", "body": "Please pay 250.",
     "account": "acct-1", "amount": 250},
    {"sender": "buyer@acme.test", "subject": "Price?", "body": "How much for 10?",
     "account": "acct-3", "amount": 0},
    {"sender": "user@acme.test", "subject": "Login", "body": "I cannot log in.",
     "account": "acct-4", "amount": 0},
    {"sender": "billing@acme.test", "subject": "Invoice 43", "body": "Please pay 30.",
     "account": "acct-1", "amount": 30},
    {"sender": "billing@acme.test", "subject": "Invoice 44", "body": "Please pay 60.",
     "account": "acct-1", "amount": 60},
]


def invoice_workflow(home: Path) -> None:
    """Five triage runs: a schema retry, human routes, a payment, a budget alert, a refusal."""
    prepare_home(home)
    client = RecordedClient.from_file(GOLDEN / "recordings" / "invoice_triage.json")
    with pinned_runtime(home) as rt:
        rt.context.append([BudgetBook(rt.journal).set_event(
            Budget(level="workflow", subject="invoice-triage", limit=5.0), by="user:ops",
            now=rt.clock())])
        engine = Engine(rt, client=client, packages={"cradle-kg": cradle_kg.__version__})
        wf = invoice_triage()
        runs = [engine.start(wf, m, run_id=f"wf:golden-{i}").run_id
                for i, m in enumerate(MESSAGES, start=1)]
        engine.decide(runs[0], "route", {"route": "pay"}, by="user:carol")
        engine.decide(runs[1], "route", {"route": "review", "note": "a quote"}, by="user:carol")
        engine.decide(runs[3], "route", {"route": "pay"}, by="user:carol")


GOLDENS: dict[str, Callable[[Path], None]] = {"demo": demo, "invoice_triage": invoice_workflow}


def export(home: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    with open_home_journal(home) as journal:
        keys = journal.claimed_keys()
        lines = [canonical_json({**e.model_dump(mode="json", exclude={"payload_hash", "id",
                                                                      "prev_hash"}),
                                 "idem_key": keys.get(e.seq)}) for e in journal.events()]
    (dest / "journal.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.copy(Home(home).config, dest / "config.json")
    blobs = {}
    for path in sorted(Home(home).evidence.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            blobs["sha256:" + path.parent.name + path.name] = path.read_text(encoding="utf-8")
    (dest / "evidence.json").write_text(json.dumps(blobs, indent=1, sort_keys=True) + "\n",
                                        encoding="utf-8")


def load(golden: Path, home: Path, *, check_hashes: bool = True) -> str:
    """Rebuild a home from a golden folder; every event must get its recorded hash back."""
    (home / "policies").mkdir(parents=True, exist_ok=True)
    shutil.copy(golden / "config.json", Home(home).config)
    store = EvidenceStore(Home(home).evidence)
    for text in json.loads((golden / "evidence.json").read_text(encoding="utf-8")).values():
        store.put(text.encode("utf-8"))
    head = ""
    with open_home_journal(home) as journal:
        for line in (golden / "journal.jsonl").read_text(encoding="utf-8").splitlines():
            e = json.loads(line)
            written = journal.append([NewEvent(
                run_id=e["run_id"], kind=e["kind"], subject=e["subject"], actor=e["actor"],
                at=parse_iso(e["at"]), payload=e["payload"], idem_key=e["idem_key"])])[0]
            if check_hashes and written.hash != e["hash"]:
                raise ValueError(f"{golden.name}: seq {e['seq']} does not rebuild to its hash")
            head = written.hash
    return head


def generate(name: str, dest: Path, work: Path) -> None:
    home = work / name
    GOLDENS[name](home)
    export(home, dest / name)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for golden_name in GOLDENS:
            generate(golden_name, GOLDEN, Path(tmp))
            print(f"wrote {GOLDEN / golden_name}", file=sys.stderr)
