"""A home whose ``quotas`` run an agent named before it was reserved leaks no quota record.

Attack: ``quotas`` became one of the runtime's own runs (``quota.reached``, ``test_217``)
in this round; before, it was a run name like any other. In a home upgraded in place, an
agent that had claimed the run ``quotas`` (its ``run.claimed``, as ``claim_run`` wrote it)
stayed its owner: every identity's quota record was then journaled in that agent's run,
and its token read them as the run's reader — which agent was throttled by which quota,
and since when (the subjects ``quota.<quota>:<identity>``, the run's ``why``).

What must hold: the runtime's own runs (``evidence``, ``budgets``, ``quotas``) are read in
full by the approvers only, whoever claimed them in an older journal; another token sees
what it sees of any run not its own (kinds, actors, times).
"""

from __future__ import annotations

from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.loop.context import RUN_CLAIM_PREFIX
from cradle_kg.records import RUNTIME_ACTOR
from cradle_kg.server.auth import issue_agent_token
from cradle_kg.storage import NewEvent

from .homes import credit, json_api
from .mcp_http import AGENT, MALLORY, fresh


def test_an_older_claim_of_the_quotas_run_reads_no_record(tmp_path: Path) -> None:
    home = fresh(tmp_path, "home")
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(
            update={"refusals_per_agent_per_hour": 1})}))
    with Runtime(home, graph_sync=False) as rt, json_api(rt) as client:
        # what an older runtime wrote when Mallory's client named the run `quotas`
        rt.context.append([NewEvent(run_id="quotas", kind="run.claimed", subject="quotas",
                                    actor=MALLORY, at=rt.clock(),
                                    payload={"agent_id": MALLORY},
                                    idem_key=RUN_CLAIM_PREFIX + "quotas")])
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        mallory = {"Authorization": "Bearer "
                   + issue_agent_token(rt.home, rt.config, MALLORY)}
        for i in range(3):
            client.post("/api/proposals", headers=agent, json=credit(f"big-{i}", amount=5000))
        [record] = [e for e in rt.journal.events(run_id="quotas")
                    if e.kind == "quota.reached"]
        assert record.actor == RUNTIME_ACTOR
        seen = client.get("/api/runs/quotas", headers=mallory)
        assert seen.status_code == 200, seen.text
        shown = seen.json()
        assert [e["subject"] for e in shown["events"]] == [None, None]  # before: both
        assert AGENT not in seen.text  # the throttled identity
        view = client.get("/api/runs/quotas/view", headers=mallory)
        assert view.status_code == 200 and AGENT not in view.text, view.text
