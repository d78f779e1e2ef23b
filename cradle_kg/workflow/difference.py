"""Live replay: the same inputs, new calls or a new policy set, and what changed.

The recorded inputs of each run — proposals submitted, workflow inputs, human decisions
— are replayed in a scratch home, in their recorded order and at their recorded times,
with a real model client (``--model``), a new policy set (``--policies``) or a new pack
(``--pack``). Tools that would have a side effect are served their recorded observation
or run in dry-run, never for real (:mod:`.sandbox`). The result is a difference report:
per run and in total, which decisions, outcomes, verifications and step outputs changed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import zip_longest
from pathlib import Path
from typing import Any

from ..canonical import content_hash
from ..errors import InputError
from ..loop.settlement import COMPENSATION_PREFIX
from ..policy import PolicyEngine
from ..records import AuditEvent, Plan, Proposal
from .definitions import load_recorded_workflow
from .engine import Engine
from .model import ModelClient, RecordedClient, package_versions
from .replay import INPUT_KINDS, PackSet, Source, pack_id, scratch_home
from .sandbox import Recording, SandboxRuntime

CATEGORIES = ("decision", "outcome", "verification", "step", "pack")


@dataclass(frozen=True)
class Change:
    run_id: str
    category: str
    subject: str
    #: 1 for the first occurrence of this subject in the run, 2 for the second, ...
    occurrence: int
    recorded: Any
    replayed: Any

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "category": self.category, "subject": self.subject,
                "occurrence": self.occurrence, "recorded": self.recorded,
                "replayed": self.replayed}


@dataclass
class LiveReport:
    runs: list[str]
    changes: list[Change] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    def for_run(self, run_id: str) -> list[Change]:
        return [c for c in self.changes if c.run_id == run_id]

    @property
    def totals(self) -> dict[str, int]:
        out = dict.fromkeys(CATEGORIES, 0)
        for change in self.changes:
            out[change.category] += 1
        out["runs_changed"] = len({c.run_id for c in self.changes})
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"settings": self.settings, "totals": self.totals,
                "runs": [{"run_id": r, "changes": [c.to_dict() for c in self.for_run(r)]}
                         for r in self.runs]}


def facts_of(events: Iterable[AuditEvent], run_ids: Iterable[str]
             ) -> dict[str, dict[str, list[tuple[str, Any]]]]:
    """What each run decided and produced, per category, in order: (subject, value); read
    in one pass over the events."""
    runs: dict[str, dict[str, list[tuple[str, Any]]]] = {
        r: {c: [] for c in CATEGORIES} for r in run_ids}
    for ev in events:
        out = runs.get(ev.run_id)
        if out is None:
            continue
        p = ev.payload
        if ev.kind == "decision.made":
            out["decision"].append((str(p["proposal_id"]), p["decision"]["verdict"]))
        elif ev.kind == "run.outcome":
            out["outcome"].append((str(p["outcome"]["proposal_id"]), p["outcome"]["status"]))
        elif ev.kind == "verification.recorded":
            out["verification"].append((str(p["action_id"]), p["verification"]["status"]))
        elif ev.kind == "step.completed":
            out["step"].append((str(p["step"]), {"output": p["output"], "by": p["by"]}))
        elif ev.kind == "step.failed":
            out["step"].append((str(p["step"]), {"failed": p["code"]}))
        elif ev.kind == "human.requested":
            out["step"].append((str(p["step"]), {"waiting": "human"}))
    return runs


def compare(run_id: str, recorded: dict[str, list[tuple[str, Any]]],
            replayed: dict[str, list[tuple[str, Any]]]) -> list[Change]:
    changes: list[Change] = []
    for category in CATEGORIES:
        before: dict[str, list[Any]] = defaultdict(list)
        after: dict[str, list[Any]] = defaultdict(list)
        for subject, value in recorded[category]:
            before[subject].append(value)
        for subject, value in replayed[category]:
            after[subject].append(value)
        for subject in [*before, *(s for s in after if s not in before)]:
            pairs = zip_longest(before.get(subject, []), after.get(subject, []))
            for n, (old, new) in enumerate(pairs, start=1):
                if old != new:
                    changes.append(Change(run_id, category, subject, n, old, new))
    return changes


@dataclass
class LiveSettings:
    client: ModelClient | None = None
    model: str | None = None
    policies: Path | None = None
    packs: Sequence[str] = ()


class _Sticky:
    """Live replay keeps each input's recorded time (limits and expiries still hold)."""

    def __init__(self) -> None:
        self.now: datetime | None = None

    def __call__(self) -> datetime:
        assert self.now is not None
        return self.now


def live_replay(home: Path, run_ids: Sequence[str], settings: LiveSettings) -> LiveReport:
    with Source.open(home) as source:
        return _live_replay(source, run_ids, settings)


def _live_replay(source: Source, run_ids: Sequence[str], settings: LiveSettings) -> LiveReport:
    home = source.home
    runs = list(run_ids) or source.runs()
    known = set(source.runs())
    missing = [r for r in runs if r not in known]
    if missing:
        raise InputError(f"no replayable run `{missing[0]}` in `{home}`")
    # a plan's run is replayed with the runs its steps name (tests/security/test_524)
    runs = list(dict.fromkeys(r for run in runs
                              for r in (run, *sorted(source.runs_of(run) - {run}))))
    selected = set(runs)
    new_policies = PolicyEngine.from_paths([settings.policies]) if settings.policies else None
    report = LiveReport(runs, settings={
        "model": settings.model, "client": settings.client.kind if settings.client else
        "recorded", "policies": new_policies.version if new_policies else "recorded",
        "packs": list(settings.packs)})
    clock = _Sticky()
    with scratch_home(source, packs=settings.packs) as scratch:
        rt = SandboxRuntime(scratch, recording=Recording.of(source.events), strict=False,
                            clock=clock)
        try:
            for run in runs:  # no code of the journal's choosing (tests/security/test_322)
                source.check_definition(run)
            engines: dict[str, Engine] = {}
            for i, ev in enumerate(source.events):
                clock.now = ev.at
                if ev.run_id not in selected or ev.kind in INPUT_KINDS:
                    rt.append_recorded([source.recorded(ev)])
                if ev.run_id not in selected or source.in_plan(i):
                    continue  # (a plan's step: its plan.started submits it)
                engine = engines.get(ev.run_id) or engines.setdefault(ev.run_id, Engine(
                    rt, client=settings.client or RecordedClient.from_events(
                        source.model_calls(ev.run_id), ev.run_id, strict=False),
                    packages=package_versions(), model_override=settings.model))
                _policies(rt, source, new_policies, i, ev.run_id)
                _live_trigger(rt, engine, source, ev, i)
            replayed = facts_of(rt.journal.events(), runs)  # streamed, not held
            now = tuple((ref, rt.pack_digests.get(ref)) for ref in rt.pack_versions)
        finally:
            rt.close()
    recorded = facts_of(source.events, runs)
    for run in runs:
        report.changes += compare(run, recorded[run], replayed[run])
        report.changes += pack_changes(run, source.recorded_packs(run), now)
    return report


def pack_changes(run_id: str, recorded: Sequence[PackSet | None],
                 replayed: PackSet) -> list[Change]:
    """The packs a live replay ran ``run_id`` under that are not those its decisions
    recorded (category ``pack``, subject the pack's id, one occurrence per set of packs
    the run recorded): a version not installed any more, another version, files edited
    under the same version (its digest), a pack added or gone. Strict replay refuses such
    a run; live replay runs it and says so (``tests/security/test_554``). A digest the
    journal did not record (written before ``test_553``) is not compared, the version is."""
    changes: list[Change] = []
    now = {pack_id(ref): (ref, digest) for ref, digest in replayed}
    for n, packs in enumerate(recorded, start=1):
        if packs is None:
            continue
        was = {pack_id(ref): (ref, digest) for ref, digest in packs}
        for pid in [*was, *(p for p in now if p not in was)]:
            old, new = was.get(pid), now.get(pid)
            if old is not None and new is not None and old[0] == new[0] \
                    and old[1] in (None, new[1]):
                continue
            changes.append(Change(run_id, "pack", pid, n, _pack_named(old),
                                  _pack_named(new)))
    return changes


def _pack_named(pack: tuple[str, str | None] | None) -> str | None:
    if pack is None:
        return None
    ref, digest = pack
    return f"{ref} ({digest})" if digest else ref


def _policies(rt: SandboxRuntime, source: Source, new: PolicyEngine | None, i: int,
              run_id: str) -> None:
    if new is not None:
        rt.policies = new
        return
    version = source.next_decision_version(i, source.runs_of(run_id))
    engine = source.policies(version) if version else None
    if engine is not None:
        rt.policies = engine


def _started_by(payload: dict[str, Any]) -> str | None:
    who = payload.get("started_by")
    return who if isinstance(who, str) else None


def _live_trigger(rt: SandboxRuntime, engine: Engine, source: Source, ev: AuditEvent,
                  i: int) -> None:
    """What the recorded event ``ev`` (at position ``i``) sets going in a live replay."""
    if ev.kind == "workflow.started":
        p = ev.payload
        engine.start(load_recorded_workflow(str(p["definition"]), version=str(p["version"])),
                     p["input"], run_id=ev.run_id, started_by=_started_by(p))
    elif ev.kind == "human.decided" or (ev.kind == "approval.decided"
                                         and ev.payload.get("status") != "revoked"
                                         and source.is_workflow(ev.run_id)):
        # (a revoke walks no run on: the run is walked when it comes again, test_304)
        engine.advance(ev.run_id)
    elif ev.kind == "plan.started":
        # the plan again: its steps submitted, skipped or aborted as they decide now
        rt.run_plan(Plan.model_validate(ev.payload["plan"]))
    elif _runtimes_own(ev):
        # a compensation the runtime proposed: the replayed failure proposes it again by
        # itself (or, verified now, does not); no agent may submit it (tests/security/test_578)
        return
    elif ev.kind == "proposal.received" and not source.is_workflow(ev.run_id):
        rt.submit(Proposal.model_validate(ev.payload["proposal"]))
    elif ev.kind == "proposal.replayed" and not source.is_workflow(ev.run_id):
        # the identical proposal submitted again: submit the recorded one again
        first = source.first_submission(ev.run_id, ev.subject, ev.payload.get("attempt", 0), i)
        if first is not None:
            rt.submit(Proposal.model_validate(first.payload["proposal"]))


def _runtimes_own(ev: AuditEvent) -> bool:
    """Whether ``ev`` submits a proposal the runtime made itself (a compensation)."""
    if ev.kind == "proposal.received":
        return str(ev.payload["proposal"]["id"]).startswith(COMPENSATION_PREFIX)
    return ev.kind == "proposal.replayed" and ev.subject.startswith(COMPENSATION_PREFIX)


def render(report: LiveReport) -> list[str]:
    lines = [f"live replay: {len(report.runs)} run(s); settings "
             + ", ".join(f"{k}={v}" for k, v in report.settings.items())]
    for run in report.runs:
        changes = report.for_run(run)
        lines.append(f"run {run}: " + ("no change" if not changes else
                                       f"{len(changes)} change(s)"))
        for c in changes:
            lines.append(f"  {c.category} {c.subject} #{c.occurrence}: "
                         f"{_short(c.recorded)} -> {_short(c.replayed)}")
    totals = report.totals
    lines.append("total: " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    return lines


def _short(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return value
    text = str(value)
    return text if len(text) <= 80 else content_hash(value)[:19] + "..."
