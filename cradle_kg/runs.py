"""Current state of runs — a projection of the journal, folded on every read.

Only the runs read are folded: the journal's ``runs`` table (kept in the journal's own
transaction, see :mod:`.journal.derived`) says which runs there are, in order, so a page
of runs costs what its runs' events cost, whatever the size of the journal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from .errors import UnknownNameError
from .records import AuditEvent
from .storage import Journal


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


def list_runs(journal: Journal, *, limit: int | None = None, offset: int = 0,
              newest_first: bool = False) -> list[RunSummary]:
    """The runs that received a proposal, one page of them (all by default)."""
    return list_page(journal, limit=limit, offset=offset, newest_first=newest_first)[0]


def list_page(journal: Journal, *, limit: int | None, offset: int = 0,
              newest_first: bool = False) -> tuple[list[RunSummary], int]:
    """One page of runs (in the order of their first event, or newest first) and how many
    runs there are in all."""
    run_ids, total = journal.proposal_runs(limit=limit, offset=offset,
                                           newest_first=newest_first)
    return [_summary(run_id, journal.events(run_id=run_id)) for run_id in run_ids], total


def _summary(run_id: str, events: Iterable[AuditEvent]) -> RunSummary:
    summary: RunSummary | None = None
    for event in events:
        if summary is None:
            summary = RunSummary(run_id, event.at, event.at)
        _fold(summary, event)
    if summary is None:
        raise UnknownNameError(f"unknown run `{run_id}`", hint="`cradle-kg runs list` shows them")
    return summary


def show_run(journal: Journal, run_id: str) -> tuple[RunSummary, list[AuditEvent]]:
    events = list(journal.events(run_id=run_id))
    return _summary(run_id, events), events
