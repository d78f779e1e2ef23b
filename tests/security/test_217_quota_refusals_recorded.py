"""A quota's refusals leave one bounded record in the journal.

Finding (left open by ``test_204`` and ``test_191`` / ``test_205``): a call refused by a
quota — an agent's refused proposals of the hour (``refusals_per_agent_per_hour``), what
may wait for a person on its behalf (``waiting_per_agent``), an identity's evidence
uploads of the hour (``evidence_uploads_per_hour``) — wrote nothing at all: its client was
told (429) but an auditor reading the journal could not see that an agent had been
throttled, nor since when.

Now the first refusal by a quota writes one ``quota.reached`` event (the quota, the
identity, its limit) in the runtime's run ``quotas``, and no other for that quota and
identity within the hour — however many calls a flood sends — so the record is no flood
vector of its own. Its bound is a usage bucket derived from those events (``audit
verify`` compares it) and checked under the journal's writer's lock.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import QuotaExceededError
from cradle_kg.server.auth import issue_agent_token
from tests.security.homes import json_api
from tests.security.server_times import age_server_times

from .test_204_refused_proposals_quota import _credit

pytestmark = pytest.mark.usefixtures("journal_backend")


def _limits(home: Path, **limits: Any) -> None:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "input_limits": config.input_limits.model_copy(update=limits)}))


def _records(rt: Runtime) -> list[dict[str, Any]]:
    return [dict(e.payload) for e in rt.journal.events() if e.kind == "quota.reached"]


def test_a_flood_of_refused_proposals_is_recorded_once_an_hour(ledger_home: Path) -> None:
    _limits(ledger_home, refusals_per_agent_per_hour=1)
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        out = client.post("/api/proposals", headers=agent, json=_credit("big-0", 5000))
        assert out.status_code == 200 and out.json()["status"] == "denied", out.text
        assert _records(rt) == []  # within the quota: nothing to record
        for i in range(1, 41):
            out = client.post("/api/proposals", headers=agent, json=_credit(f"big-{i}", 5000))
            assert out.status_code == 429, out.text
        [record] = _records(rt)  # before: none; and never one per refused call
        assert record["quota"] == "refusals_per_agent_per_hour"
        assert record["identity"] == AGENT and record["limit"] == 1
        events = rt.journal.head()[0]
        with pytest.raises(QuotaExceededError):
            rt.submit(_credit("big-x", 5000))
        assert rt.journal.head()[0] == events  # the flood writes nothing more
        assert rt.journal.verify().intact  # the bound's bucket is derived and compared

        # an hour later, still throttled: one record more
        later = rt.clock() + timedelta(hours=1, seconds=2)
        rt.clock = lambda: later
        # on PostgreSQL the hour is the server's (test_608): its recorded times move
        age_server_times(rt, timedelta(hours=1, seconds=2))
        assert rt.submit(_credit("big-y", 5000)).status == "denied"  # the window freed
        for i in range(5):
            with pytest.raises(QuotaExceededError):
                rt.submit(_credit(f"big-z{i}", 5000))
        assert [r["quota"] for r in _records(rt)] == ["refusals_per_agent_per_hour"] * 2
        assert rt.journal.verify().intact


def test_the_waiting_quota_is_recorded_once(ledger_home: Path) -> None:
    _limits(ledger_home, waiting_per_agent=1)
    (ledger_home / "policies" / "credits.cedar").write_text(
        '@id("big")\n@requires_approval("true")\npermit(principal, action == '
        'Action::"demo.ledger.credit", resource) when { context.arguments has amount && '
        'context.arguments.amount > 500 && context.arguments.amount < 1000 };\n',
        encoding="utf-8")
    with Runtime(ledger_home, graph_sync=False) as rt:
        assert rt.submit(_credit("w-0", 800)).status == "awaiting_approval"
        for i in range(1, 21):
            with pytest.raises(QuotaExceededError):
                rt.submit(_credit(f"w-{i}", 800))
        [record] = _records(rt)
        assert record["quota"] == "waiting_per_agent" and record["identity"] == AGENT
        assert rt.journal.verify().intact


def test_the_upload_quota_is_recorded_once(ledger_home: Path) -> None:
    _limits(ledger_home, evidence_uploads_per_hour=1)
    with Runtime(ledger_home, graph_sync=False) as rt, json_api(rt) as client:
        agent = {"Authorization": "Bearer " + issue_agent_token(rt.home, rt.config, AGENT)}
        ok = client.post("/api/evidence", headers=agent, content=b"first")
        assert ok.status_code == 200, ok.text
        for i in range(20):
            out = client.post("/api/evidence", headers=agent, content=f"more {i}".encode())
            assert out.status_code == 429, out.text
        [record] = _records(rt)
        assert record["quota"] == "evidence_uploads_per_hour" and record["identity"] == AGENT
        assert rt.journal.verify().intact
