"""A graph policy's annotation the runtime cannot read is refused, never read as its default.

Finding (thirteenth attack review, left open): a lineage graph policy (a pack's ``.rq``
rule) carries its verdict in a leading comment, ``# @verdict("deny")``, and the loader
read only the annotations it matched exactly: ``# @verdit("deny")``, ``# @Verdict("deny")``,
``# @verdict('deny')`` (single quotes) or one after a blank line was left out, and the rule
took its default verdict, ``require_approval`` — a person could now allow what the
author's rule denies. ``pack validate`` did not read graph policies at all: it said the
pack was valid. ``test_189`` refuses the same for a Cedar obligation.

Now every leading annotation is read as written or refused: one the loader cannot read,
one written twice and one spelled like an annotation it reads (naming it) stop the home
(one ``error:`` line naming the file and line, exit 2) and make ``pack validate`` report
the pack invalid. An annotation of the author's own (``@owner``) is left alone, and a rule
written as documented loads and decides as before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.loop.runtime import Runtime
from cradle_kg.records import OutcomeStatus
from tests.inprocess import run_cli

pytestmark = pytest.mark.usefixtures("journal_backend")

MANIFEST = """id: incident.rules
name: Incident rules
version: 1.0.0
core_ontology: ">=0.1.0"
graph_policies:
  - rules/freeze.rq
"""
RULE = """# @id("freeze-writes")
# @owner("sre")
{verdict}
# @reason("incident 42: writes are frozen")
ASK {{ ?action ?p ?o }}
"""
CREDIT = {"id": "p-1", "task_id": "task-1", "agent_id": AGENT,
          "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-4",
                     "arguments": {"account": "acct-4", "amount": 10}}}


def _pack(home: Path, verdict: str) -> Path:
    folder = home / "packs" / "incident.rules"
    (folder / "rules").mkdir(parents=True, exist_ok=True)
    (folder / "manifest.yaml").write_text(MANIFEST, encoding="utf-8")
    (folder / "rules" / "freeze.rq").write_text(RULE.format(verdict=verdict), encoding="utf-8")
    config = load_config(home / "config.json")
    if "incident.rules" not in config.packs:
        save_config(home / "config.json", config.model_copy(update={
            "packs": (*config.packs, "incident.rules")}))
    return folder


@pytest.mark.parametrize("verdict", [
    '# @verdit("deny")', '# @Verdict("deny")', "# @verdict('deny')",
    '# @verdict("deny") # freeze', '# @verdict("deny")\n# @verdict("require_approval")',
    '\n# @verdit("deny")'])
def test_an_unreadable_annotation_stops_the_home(ledger_home: Path, verdict: str,
                                                 tmp_path: Path) -> None:
    folder = _pack(ledger_home, verdict)
    # the review of the pack says so (before: valid)
    done = run_cli("pack", "validate", str(folder), "--no-reasoner", "--format", "json")
    report = json.loads(done.stdout)
    assert report["ok"] is False, report
    assert any("freeze.rq" in e for e in report["errors"]), report
    assert done.returncode != 0
    # the home does not open: one line, exit 2, nothing ran (before: awaiting approval)
    proposal = tmp_path / "credit.json"
    proposal.write_text(json.dumps(CREDIT), encoding="utf-8")
    done = run_cli("submit", str(proposal), "--home", str(ledger_home))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and "freeze.rq" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_documented_rule_loads_and_denies(ledger_home: Path) -> None:
    folder = _pack(ledger_home, '# @verdict("deny")')
    done = run_cli("pack", "validate", str(folder), "--no-reasoner", "--format", "json")
    assert json.loads(done.stdout)["ok"] is True, done.stdout
    with Runtime(ledger_home, graph_sync=False) as rt:
        out = rt.submit(CREDIT)
        assert out.status is OutcomeStatus.DENIED, out.reasons
        assert any("writes are frozen" in r for r in out.reasons), out.reasons
