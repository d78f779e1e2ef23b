"""Current state of runs — a projection of the journal, rebuilt on every read.

Nothing here is stored: the journal is the truth and this module folds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .errors import UnknownNameError
from .journal import Journal
from .records import AuditEvent


@dataclass
class RunSummary:
    run_id: str
    started_at: datetime
    updated_at: datetime
    events: int = 0
    proposals: list[str] = field(default_factory=list)
    #: proposal id -> the status of its latest outcome
    outcomes: dict[str, str] = field(default_factory=dict)
    #: human tasks opened for this run and not resolved yet (escalations, reconciliations)
    human_tasks: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if not self.outcomes:
            return "in_progress"
        values = set(self.outcomes.values())
        if self.human_tasks and not values & {"awaiting_approval", "in_progress"}:
            return "escalated"
        for status in ("awaiting_approval", "in_progress", "escalated", "verification_failed",
                       "failed", "inconclusive", "needs_clarification", "repair", "denied"):
            if status in values:
                return status
        return "executed"

    def to_dict(self) -> dict[str, object]:
        return {"run_id": self.run_id, "status": self.status, "events": self.events,
                "proposals": self.proposals, "outcomes": self.outcomes,
                "human_tasks": self.human_tasks,
                "started_at": self.started_at.isoformat(),
                "updated_at": self.updated_at.isoformat()}


def _fold(summary: RunSummary, event: AuditEvent) -> None:
    summary.events += 1
    summary.updated_at = event.at
    if event.kind == "proposal.received" and event.subject not in summary.proposals:
        summary.proposals.append(event.subject)
    elif event.kind == "run.outcome":
        outcome = event.payload["outcome"]
        # a submission refused for reusing an id is listed apart: it never overwrites the
        # status of the proposal that holds the id
        refused = event.payload.get("submission")
        key = f"{outcome['proposal_id']}@{refused[7:19]}" if refused else outcome["proposal_id"]
        summary.outcomes[key] = outcome["status"]
    elif event.kind == "human_task.opened":
        summary.human_tasks.append(event.payload["task_id"])
    elif event.kind == "human_task.resolved" and event.payload["task_id"] in summary.human_tasks:
        summary.human_tasks.remove(event.payload["task_id"])


def list_runs(journal: Journal) -> list[RunSummary]:
    runs: dict[str, RunSummary] = {}
    for event in journal.events():
        if event.run_id not in runs:
            runs[event.run_id] = RunSummary(event.run_id, event.at, event.at)
        _fold(runs[event.run_id], event)
    return [r for r in runs.values() if r.proposals]


def show_run(journal: Journal, run_id: str) -> tuple[RunSummary, list[AuditEvent]]:
    events = list(journal.events(run_id=run_id))
    if not events:
        raise UnknownNameError(f"unknown run `{run_id}`", hint="`cradle-kg runs list` shows them")
    summary = RunSummary(run_id, events[0].at, events[0].at)
    for event in events:
        _fold(summary, event)
    return summary, events
