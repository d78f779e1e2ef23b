"""``replay --live`` replays a run the runtime compensated in.

Finding (the twenty-sixth review, the README walked as an auditor): ``cradle-kg replay
--live --policies NEW/ --home H`` on the demo's home — whose ``infra.uptimeharbor`` runs
hold a failed deploy compensated by a rollback — ended the whole report in one line,
``error: proposal: `id`: `comp:` is a namespace the runtime names its own records in …``,
exit 2: live replay submitted every recorded ``proposal.received`` again, the runtime's own
compensation proposal (``comp:…``) too, which no agent may submit (``test_58``). A home
where any compensation ever ran could not be live-replayed at all.

Now live replay leaves the runtime's compensation proposals to the runtime: the failed
action replayed fails its verification again and the runtime compensates it by itself
(or, if it verifies now, does not — a difference the report shows). A home's own pack
(``acme.flaky``): a compensable write whose verifier never confirms it, its compensation
a write the verifier confirms.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.config import Permission, load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.records import OutcomeStatus, Proposal
from cradle_kg.workflow import LiveSettings, live_replay
from tests.packs.conftest import cli

pytestmark = pytest.mark.usefixtures("journal_backend")

CODE = '''
from pydantic import BaseModel
from cradle_kg.packs.sdk import (IdempotencyClass, SideEffectClass, read_back, report,
                                 tool, verifier)

class Name(BaseModel):
    name: str

class Done(BaseModel):
    ok: bool

@verifier("acme.never")
def never(ctx, req):
    return report(read_back(True, False), read_at=ctx.clock(), source="acme",
                  evidence={"name": req.arguments.name})

@verifier("acme.always")
def always(ctx, req):
    return report(read_back(True, True), read_at=ctx.clock(), source="acme",
                  evidence={"name": req.arguments.name})

@tool("acme.set", input_model=Name, output_model=Done,
      side_effect_class=SideEffectClass.COMPENSABLE, idempotency=IdempotencyClass.NATURAL,
      verifier="acme.never", target_from="acme:{name}", compensation_tool="acme.unset")
def set_(ctx, call):
    return Done(ok=True)

@tool("acme.unset", input_model=Name, output_model=Done,
      side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
      verifier="acme.always", target_from="acme:{name}")
def unset(ctx, call):
    return Done(ok=True)
'''


def _flaky_home(home: Path) -> None:
    folder = home / "packs" / "flaky"
    folder.mkdir(parents=True)
    (folder / "manifest.yaml").write_text(
        "id: acme.flaky\nname: flaky\nversion: 1.0.0\ncore_ontology: '>=0.1.0'\n"
        "tools: ['code:set_', 'code:unset']\nverifiers: ['code:never', 'code:always']\n",
        encoding="utf-8")
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "code.py").write_text(CODE, encoding="utf-8")
    (home / "policies" / "acme.cedar").write_text(
        '@id("acme-tools")\npermit(principal, action, resource) '
        'when { context.tool like "acme.*" };\n', encoding="utf-8")
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "packs": (*config.packs, "acme.flaky"),
        "permissions": (*config.permissions,
                        Permission(subject=AGENT, action_type="acme.*",
                                   resource_selector="acme:*"))}))


def test_a_compensated_run_replays_live(home: Path) -> None:
    _flaky_home(home)
    with Runtime(home, graph_sync=False) as rt:
        out = rt.submit(Proposal.model_validate({
            "id": "p-set", "task_id": "t-set", "agent_id": AGENT,
            "action": {"action_type": "acme.set", "target": "acme:x",
                       "arguments": {"name": "x"}}}))
        kinds = [e.kind for e in rt.journal.events() if e.run_id == out.run_id]
    assert out.status is OutcomeStatus.VERIFICATION_FAILED, out.reasons
    assert "compensation.recorded" in kinds, kinds
    assert any("compensated" in r for r in out.reasons), out.reasons

    # before: ProposalError "`comp:` is a namespace the runtime names its own records in"
    report = live_replay(home, [out.run_id], LiveSettings())
    assert report.changes == [], report.changes  # the same failure, compensated the same

    done = cli("replay", out.run_id, "--live", "--home", str(home))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"run {out.run_id}: no change" in done.stdout, done.stdout
