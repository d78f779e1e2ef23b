"""The incident pack's world for security tests: a world whose production is down (an
open incident), proposals about it, and a fix carried through staging to production."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cradle_kg.packs import testing
from cradle_kg.records import ApprovalStatus, OutcomeStatus

PACK = Path(__file__).resolve().parents[2] / "packs" / "infra.uptimeharbor"
FIXER = "agent:harbor-fixer"
SECOND = "agent:harbor-fixer-2"


@contextmanager
def outage(home: testing.PackHome, world: str) -> Iterator[tuple[Any, Any, dict[str, Any]]]:
    """The world ``world`` set up and its production down: (harbor, fixture, incident);
    its services stopped at the end."""
    home.entry("adapters:ensure_identities")(home.runtime)
    setup = home.entry("scenario.steps:setup")
    world_dir = home.entry("governed.worlds:world_dir")
    h, fx, _ = setup(world_dir(home.root, world))
    try:
        _step, incident = home.entry("scenario.steps:step_detect_outage")(h, "production")
        assert incident is not None
        yield h, fx, incident
    finally:
        h.envs.stop_all()


def submit(home: testing.PackHome, world: str, pid: str, tool: str, thing: str,
           arguments: dict[str, Any], environment: str, *, agent: str = FIXER,
           task: str | None = None, **action: Any) -> Any:
    """``tool`` on ``harbor:<world>/<thing>`` by ``agent`` for the release manager (task
    ``t<world's number>`` unless named)."""
    return home.runtime.submit({
        "id": pid, "task_id": task or "t" + world.lstrip("w"), "agent_id": agent,
        "on_behalf_of": "user:release-manager",
        "action": {"action_type": tool, "target": f"harbor:{world}/{thing}",
                   "arguments": arguments, "environment": environment, **action}})


def fixed_in_production(home: testing.PackHome, world: str, h: Any, fx: Any,
                        iid: str) -> None:
    """``fix-1`` claimed by :data:`FIXER`, deployed to staging, then to production with the
    on-call's approval — each step executed (verified)."""
    fix, n = fx["fix"], world.lstrip("w")
    assert submit(home, world, f"p{n}-claim", "infra.claim_fix", f"incident/{iid}",
                  {"incident_id": iid, "fix_id": "fix-1", "commit": fix},
                  "local").status is OutcomeStatus.EXECUTED
    deploy = {"commit": fix, "incident_id": iid, "fix_id": "fix-1"}
    staged = submit(home, world, f"p{n}-staging", "infra.deploy", "staging",
                    {"env": "staging", **deploy}, "staging")
    assert staged.status is OutcomeStatus.EXECUTED, staged.reasons
    proof = home.entry("harbor:staging_resolution")(h.snapshot(), fix, iid)
    waiting = submit(home, world, f"p{n}-prod", "infra.deploy", "production",
                     {"env": "production", **deploy, "staging_verification": proof["id"]},
                     "production", risk_level="high")
    assert waiting.approval is not None, waiting.reasons
    on_call = home.entry("adapters:ON_CALL")
    _, done = home.runtime.decide_approval(
        waiting.approval.id, approver_id=on_call,
        token=home.entry("adapters:EXAMPLE_TOKENS")[on_call], status=ApprovalStatus.APPROVED)
    assert done is not None and done.status is OutcomeStatus.EXECUTED, done
