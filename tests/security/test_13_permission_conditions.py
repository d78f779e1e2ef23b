"""Issue 14 item 5: `Permission.conditions` were accepted and ignored.

Attack reproduced: a permission written ``{"max_amount": 10}`` let a credit of 500 execute.
Now the key is refused when the configuration loads (from Python, from ``config.json``,
through the CLI), and the typed language the runtime does know (`arguments`,
`environments`, `time_window`) is checked at gate 1, named in the decision.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from cradle_kg import Runtime
from cradle_kg.config import load_config
from cradle_kg.demo.scenario import AGENT, ledger_for
from cradle_kg.errors import InputError
from cradle_kg.records import OutcomeStatus, Permission
from tests.conftest import make_config

# the journal on each backend (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def credit(pid: str, amount: Any, *, account: str = "acct-1", env: str = "local") -> dict[str, Any]:
    return {"id": pid, "task_id": "task-" + pid, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.credit", "target": "ledger:" + account,
                       "environment": env, "arguments": {"account": account, "amount": amount}}}


def _runtime(home: Path, conditions: dict[str, Any], *,
             now: datetime | None = None) -> Runtime:
    base = make_config()
    others = [p for p in base.permissions if p.subject != AGENT]
    perms = (*others, Permission(subject=AGENT, action_type="demo.ledger.*",
                                 resource_selector="ledger:*", conditions=conditions))
    clock = (lambda: now) if now is not None else None
    return Runtime(home, config=base.model_copy(update={"permissions": perms}), clock=clock)


@pytest.mark.parametrize("bad", [
    {"max_amount": 10},
    {"arguments": {"amount": {"max": 10}}},
    {"arguments": {"amount": {"le": "10"}}},          # an ordering needs a number
    {"arguments": {"amount": {}}},                     # no operator at all
    {"arguments": {"amount; drop": {"le": 1}}},        # not a path
    {"environments": "production"},
    {"time_window": {"start": "25:00"}},
    {"time_window": {"timezone": "Mars/Olympus"}},
    {"time_window": {"days": ["monday"]}},
    {"time_window": {"not_before": "2026-01-01T00:00:00"}},  # naive: refused
])
def test_an_unknown_or_ill_typed_condition_is_refused_at_load(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as info:
        Permission(subject=AGENT, conditions=bad)
    assert "condition" in str(info.value)


def test_max_amount_in_config_json_stops_the_home_from_opening(home: Path) -> None:
    raw = json.loads(make_config().model_dump_json())
    raw["permissions"][0]["conditions"] = {"max_amount": 10}
    (home / "config.json").write_text(json.dumps(raw))
    with pytest.raises(InputError) as info:
        load_config(home / "config.json")
    assert "unknown condition key" in info.value.message
    with pytest.raises(InputError):
        Runtime(home)
    proc = subprocess.run([sys.executable, "-m", "cradle_kg", "tools", "list", "--home", str(home)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "unknown condition key" in proc.stderr + proc.stdout


def test_an_argument_comparison_bounds_the_credit(home: Path) -> None:
    with _runtime(home, {"arguments": {"amount": {"le": 10}}}) as rt:
        out = rt.submit(credit("p-500", 500))
        assert out.status is OutcomeStatus.DENIED
        assert out.decision is not None
        assert out.decision.reason_codes == ("permission_condition_failed",)
        assert any("`arguments.amount le 10` does not hold for `500`" in r
                   for r in out.decision.reasons)
        ok = rt.submit(credit("p-7", 7))
        assert ok.status is OutcomeStatus.EXECUTED
        assert ok.decision is not None
        perm = next(c for c in ok.decision.checks if c.check == "permission")
        assert any("`arguments.amount le 10` held (`7`)" in r for r in perm.reasons)
        assert ledger_for(rt).balance("acct-1") == 7


@pytest.mark.parametrize("amount", ["500", True, None, [1], {"v": 1}, 10.0001])
def test_typed_comparisons_fail_closed_on_other_types(home: Path, amount: Any) -> None:
    with _runtime(home, {"arguments": {"amount": {"le": 10}}}) as rt:
        out = rt.submit(credit("p-odd", amount))
        assert out.status is OutcomeStatus.DENIED
        assert ledger_for(rt).balance("acct-1") == 0


def test_an_absent_argument_fails_the_condition(home: Path) -> None:
    with _runtime(home, {"arguments": {"memo": {"eq": "ok"}}}) as rt:
        out = rt.submit(credit("p-nomemo", 5))
        assert out.status is OutcomeStatus.DENIED
        assert out.decision is not None
        assert any("the argument is absent" in r for r in out.decision.reasons)


def test_membership_and_environments(home: Path) -> None:
    conditions = {"arguments": {"account": {"in": ["acct-2"]}}, "environments": ["local"]}
    with _runtime(home, conditions) as rt:
        for pid, account, env in (("p-a1", "acct-1", "local"), ("p-a2-st", "acct-2", "staging")):
            out = rt.submit(credit(pid, 5, account=account, env=env))
            assert out.status is OutcomeStatus.DENIED
            assert out.decision is not None
            assert out.decision.reason_codes == ("permission_condition_failed",)
        out = rt.submit(credit("p-a2", 5, account="acct-2"))
        assert out.status is OutcomeStatus.EXECUTED, out.reasons


@pytest.mark.parametrize(("now", "allowed"), [
    (datetime(2026, 3, 2, 8, 30, tzinfo=UTC), True),     # Monday 09:30 in Paris
    (datetime(2026, 3, 2, 17, 30, tzinfo=UTC), False),   # Monday 18:30 in Paris
    (datetime(2026, 3, 1, 9, 0, tzinfo=UTC), False),     # a Sunday
    (datetime(2027, 1, 4, 9, 0, tzinfo=UTC), False),     # after not_after
])
def test_a_time_window_reads_the_gates_clock(home: Path, now: datetime, allowed: bool) -> None:
    window = {"days": ["mon", "tue", "wed", "thu", "fri"], "start": "08:00", "end": "18:00",
              "timezone": "Europe/Paris", "not_after": "2026-12-31T23:59:59Z"}
    with _runtime(home, {"time_window": window}, now=now) as rt:
        out = rt.submit(credit("p-time", 5))
        assert (out.status is OutcomeStatus.EXECUTED) is allowed, out.reasons
        assert out.decision is not None
        text = " ".join(out.decision.reasons + tuple(
            r for c in out.decision.checks if c.check == "permission" for r in c.reasons))
        assert "time_window" in text


def test_an_unconditioned_permission_still_grants_alongside(home: Path) -> None:
    base = make_config()
    perms = (*base.permissions, Permission(subject=AGENT, action_type="demo.ledger.credit",
                                           resource_selector="ledger:*",
                                           conditions={"arguments": {"amount": {"le": 1}}}))
    with Runtime(home, config=base.model_copy(update={"permissions": perms})) as rt:
        assert rt.submit(credit("p-big", 50)).status is OutcomeStatus.EXECUTED
