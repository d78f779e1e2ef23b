"""Current state of runs — a projection of the journal.

A run's **state** is defined here once and used by ``runs list``, ``/api/runs`` and the
page (:class:`RunState`):

==========================  ==================================================================
``escalated``               a human task opened for the run is not resolved
``waiting_for_person``      an approval or a human workflow step waits for an answer
``completed``               the run's *last* outcome succeeded (or its workflow completed)
``completed_with_failures`` the run's last outcome is a refusal or a failure (denied, failed,
                            verification failed, inconclusive, a compensation that rolled a
                            failure back), or its workflow failed
``open``                    nothing decided yet, or the agent has the next move (a
                            clarification, a repair, a workflow step to run)
==========================  ==================================================================

The last outcome decides, not the worst: a run that recovered from a failed deployment and
ended resolved is ``completed``. ``status`` keeps the last outcome's own word.

Which runs there are, in order, and what each one's state is decided from are derived
tables kept in the journal's own transaction (``runs`` and ``run_state``, see
:mod:`.storage.run_state_sql`), so counting states is one ``GROUP BY`` and filtering by
state is a paged query. The rule from those few facts to a state is :func:`state_of`, used
by both the table's readers and :attr:`RunSummary.state`.

A run's summary is read, not folded: its ``run_state`` row, its first and newest event,
its counts (by the database, nothing decoded), its newest :data:`SUMMARY_ITEMS` proposals
received and outcomes, its open human tasks (at most as many) and waiting steps — a
bounded number of rows whatever the run's length (an agent decides how long its run is:
an MCP session is one run). Before, every event of every run listed was decoded at every
poll of the runs page (``tests/security/test_89``). :func:`folded_summary` is the
definition the read meets (the whole run folded), for tests and ``audit``-style checks.
The events of one run are read a page at a time (:func:`show_run`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from .errors import InputError, UnknownNameError
from .inputs import MAX_PAGE_INTEGER, check_page
from .records import AuditEvent
from .redaction import mask_payload, secrets_by_tool
from .storage import Journal, StateKey

#: how many of a run's newest proposals, outcomes and open human tasks a summary names
#: (``proposal_count`` and ``outcome_count`` say how many there are in all)
SUMMARY_ITEMS = 20
#: the newest secret-bearing proposals of a run whose secret values ``runs show`` masks in a page
SECRETS_LOOKBACK = 1000
#: a page of one run's events (``show_run``, ``GET /api/runs/{id}``, ``runs show``): the
#: default and the largest
EVENTS_PAGE = 200
MAX_EVENTS_PAGE = 1000


#: the ``code`` of a person's cancel of a workflow run: a ``workflow.failed`` they wrote
#: (``cradle-kg workflow cancel``), its ``cancelled_by`` and ``note`` saying who and why
CANCELLED = "cancelled"


def cancelled_by(end: AuditEvent | None) -> tuple[str, str] | None:
    """Who cancelled the run and why, when ``end`` (its end) is a person's cancel."""
    if end is None:
        return None
    p = end.payload
    if (end.kind == "workflow.failed" and p.get("code") == CANCELLED
            and isinstance(p.get("cancelled_by"), str) and isinstance(p.get("note"), str)):
        return str(p["cancelled_by"]), str(p["note"])
    return None


def run_end(journal: Journal, run_id: str) -> AuditEvent | None:
    """A workflow run's end (``workflow.completed|failed``, a person's cancel too), or None
    while it has not ended: its newest such event, one row."""
    ends = journal.run_page(run_id, limit=1, newest=True,
                            kinds=("workflow.completed", "workflow.failed"))
    return ends[0] if ends else None


def after_the_end(run_id: str, end: AuditEvent | None) -> tuple[str, str]:
    """The code and the reason of a refusal of what would act in ``run_id`` after its end
    ``end`` (None: the journal said it ended, and its end was not found): ``run_cancelled``
    naming who cancelled it and why, else ``run_ended``."""
    cancel = cancelled_by(end)
    if cancel is not None:
        by, note = cancel
        return "run_cancelled", (f"workflow run `{run_id}` was cancelled by `{by}`: {note}; "
                                 "nothing runs in it after its end, approved or not")
    word = {"workflow.completed": "completed", "workflow.failed": "failed"}.get(
        end.kind if end is not None else "", "ended")
    return "run_ended", (f"workflow run `{run_id}` has ended ({word}): nothing runs in it "
                         "after its end, approved or not")


class RunState(StrEnum):
    OPEN = "open"
    WAITING_FOR_PERSON = "waiting_for_person"
    ESCALATED = "escalated"
    COMPLETED = "completed"
    COMPLETED_WITH_FAILURES = "completed_with_failures"


#: an outcome that leaves the next move to the agent
_AGENT_MOVES = frozenset({"in_progress", "needs_clarification", "repair"})


def state_of(key: StateKey) -> RunState:
    """The one rule: a run's state from its ``run_state`` key — (a human task open, how its
    workflow ended or ``''``, a human step waiting, the last outcome's status or ``''``,
    the last outcome is a compensation, a workflow started)."""
    tasks, finished, waiting, status, compensation, workflow = key
    if tasks:
        return RunState.ESCALATED
    if finished:
        return (RunState.COMPLETED if finished == "workflow.completed"
                else RunState.COMPLETED_WITH_FAILURES)
    if waiting:
        return RunState.WAITING_FOR_PERSON
    if not status:
        return RunState.OPEN
    if status == "awaiting_approval":
        return RunState.WAITING_FOR_PERSON
    if workflow or status in _AGENT_MOVES:
        return RunState.OPEN
    if status == "executed" and not compensation:
        return RunState.COMPLETED
    return RunState.COMPLETED_WITH_FAILURES


def parse_state(text: str) -> RunState:
    try:
        return RunState(text)
    except ValueError:
        raise InputError(f"unknown run state `{text}`", hint="one of " + ", ".join(
            f"`{s}`" for s in RunState)) from None


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
    #: the latest outcome of the run: (proposal id, status, reasons)
    last: tuple[str, str, list[str]] | None = None
    #: a workflow run: its id, and how it ended (``workflow.completed|failed``) if it did
    workflow: str | None = None
    finished: str | None = None
    #: human workflow steps asked and not answered: step id -> the reasons it waits
    waiting_steps: dict[str, list[str]] = field(default_factory=dict)
    #: how many distinct proposal ids the run received and how many outcomes it wrote
    #: (``proposals`` and ``outcomes`` name the newest :data:`SUMMARY_ITEMS` of them)
    proposal_count: int = 0
    outcome_count: int = 0
    #: the seq of the run's newest event
    last_seq: int = 0
    #: a workflow run a person cancelled: who, why (their reason), when
    cancelled: tuple[str, str, datetime] | None = None

    @property
    def status(self) -> str:
        """The last outcome's own word (``escalated`` while a human task is open)."""
        if self.human_tasks:
            return "escalated"
        if self.cancelled is not None:
            return CANCELLED
        if self.last is None:
            return "in_progress"
        return self.last[1]

    @property
    def key(self) -> StateKey:
        """What the state is decided from, as the journal's ``run_state`` row gives it."""
        proposal, status = ("", "") if self.last is None else self.last[:2]
        return (int(bool(self.human_tasks)), self.finished or "", int(bool(self.waiting_steps)),
                status, int(proposal.startswith("comp:")), int(self.workflow is not None))

    @property
    def state(self) -> RunState:
        return state_of(self.key)

    def why(self) -> list[str]:
        """Why the run is where it is, in a few lines (what it waits for, how it ended)."""
        state = self.state
        if state is RunState.ESCALATED:
            return [f"human task `{t}` is open" for t in self.human_tasks]
        if self.waiting_steps:
            return [f"step `{s}` waits for a person" + (f": {'; '.join(r)}" if r else "")
                    for s, r in self.waiting_steps.items()]
        if self.cancelled is not None:
            return [_cancel_line(*self.cancelled[:2])]
        if self.last is None:
            return []
        proposal, status, reasons = self.last
        return [f"`{proposal}`: {status}" + (f": {'; '.join(reasons)}" if reasons else "")]

    def to_dict(self) -> dict[str, object]:
        return {"run_id": self.run_id, "state": self.state.value, "status": self.status,
                "why": self.why(), "events": self.events, "proposals": self.proposals,
                "outcomes": self.outcomes, "human_tasks": self.human_tasks,
                "proposal_count": self.proposal_count, "outcome_count": self.outcome_count,
                "workflow": self.workflow, "waiting_steps": sorted(self.waiting_steps),
                "last_outcome": None if self.last is None else
                {"proposal_id": self.last[0], "status": self.last[1]},
                "started_at": self.started_at.isoformat(),
                "updated_at": self.updated_at.isoformat(),
                "cancelled": None if self.cancelled is None else {
                    "by": self.cancelled[0], "reason": self.cancelled[1],
                    "at": self.cancelled[2].isoformat()}}


def _cancel_line(by: str, reason: str) -> str:
    return f"workflow cancelled by `{by}`: {reason}"


def _cancel_of(summary: RunSummary, end: AuditEvent | None) -> None:
    cancel = cancelled_by(end)
    summary.cancelled = None if cancel is None or end is None else (*cancel, end.at)


def _outcome(summary: RunSummary, event: AuditEvent) -> None:
    outcome = event.payload["outcome"]
    # a submission refused for reusing an id is listed apart: it never overwrites the
    # status of the proposal that holds the id
    refused = event.payload.get("submission")
    key = f"{outcome['proposal_id']}@{refused[7:19]}" if refused else outcome["proposal_id"]
    summary.outcomes[key] = outcome["status"]
    if not refused:
        summary.last = (outcome["proposal_id"], outcome["status"],
                        [str(r) for r in outcome.get("reasons", [])])


def _fold(summary: RunSummary, event: AuditEvent) -> None:
    summary.events += 1
    summary.updated_at = event.at
    summary.last_seq = event.seq
    p = event.payload
    if event.kind == "proposal.received":
        if event.subject not in summary.proposals:
            summary.proposals.append(event.subject)
            summary.proposal_count += 1
    elif event.kind == "run.outcome":
        summary.outcome_count += 1
        _outcome(summary, event)
    elif event.kind == "human_task.opened":
        summary.human_tasks.append(p["task_id"])
    elif event.kind == "human_task.resolved":
        summary.human_tasks = [t for t in summary.human_tasks if t != p["task_id"]]
    elif event.kind == "workflow.started":
        summary.workflow = str(p.get("workflow"))
    elif event.kind in ("workflow.completed", "workflow.failed"):
        summary.finished = event.kind
        summary.waiting_steps.clear()
        _cancel_of(summary, event)
    elif event.kind == "human.requested":
        summary.waiting_steps[str(p["step"])] = [str(r) for r in p.get("reasons", [])]
    elif event.kind == "human.decided":
        summary.waiting_steps.pop(str(p["step"]), None)


def list_runs(journal: Journal, *, limit: int | None = None, offset: int = 0,
              newest_first: bool = False) -> list[RunSummary]:
    """The runs that received a proposal or ran a workflow, one page of them."""
    return list_page(journal, limit=limit, offset=offset, newest_first=newest_first)[0]


def list_page(journal: Journal, *, limit: int | None, offset: int = 0,
              newest_first: bool = False, state: RunState | None = None
              ) -> tuple[list[RunSummary], int]:
    """One page of runs (in the order of their first event, or newest first), and how many
    runs there are in all (in that state, when ``state`` is given). Only the page's runs
    are folded. ``limit`` and ``offset`` past what the journal's integers hold are an
    :class:`InputError` (before: ``/api/runs?offset=1e20`` was an HTTP 500 and a
    traceback, ``tests/security/test_66``)."""
    check_page(limit=limit, offset=offset)
    keys = None if state is None else [
        key for key, _ in journal.run_state_groups() if state_of(key) is state]
    run_ids, total = journal.listed_runs(keys=keys, limit=limit, offset=offset,
                                         newest_first=newest_first)
    return [read_summary(journal, run_id) for run_id in run_ids], total


def state_counts(journal: Journal) -> dict[str, int]:
    """How many runs are in each state (every state named, zeros included)."""
    counts = dict.fromkeys((s.value for s in RunState), 0)
    for key, n in journal.run_state_groups():
        counts[state_of(key).value] += n
    return counts


def folded_summary(run_id: str, events: Iterable[AuditEvent]) -> RunSummary:
    """The definition: the whole run folded (every event decoded). :func:`read_summary`
    gives the same for a run with at most :data:`SUMMARY_ITEMS` proposals received,
    outcomes and open human tasks, and the newest of those for a longer one."""
    summary: RunSummary | None = None
    for event in events:
        if summary is None:
            summary = RunSummary(run_id, event.at, event.at)
        _fold(summary, event)
    if summary is None:
        raise _unknown(run_id)
    return summary


def _unknown(run_id: str) -> UnknownNameError:
    return UnknownNameError(f"unknown run `{run_id}`", hint="`cradle-kg runs list` shows them")


def read_summary(journal: Journal, run_id: str) -> RunSummary:
    """A run's summary from its derived rows and a bounded read: at most a few times
    :data:`SUMMARY_ITEMS` rows decoded, whatever the run's length (before: every event of
    the run, at every poll of the runs page and the run view — ``tests/security/test_89``).
    """
    first = journal.run_page(run_id, limit=1)
    if not first:
        raise _unknown(run_id)
    newest = journal.run_page(run_id, limit=1, newest=True)
    events, proposals, outcomes = journal.run_counts(run_id)
    summary = RunSummary(run_id, first[0].at, newest[0].at, events=events,
                         proposal_count=proposals, outcome_count=outcomes,
                         last_seq=newest[0].seq)
    received = journal.run_page(run_id, limit=SUMMARY_ITEMS, newest=True,
                                kinds=("proposal.received",))
    summary.proposals = list(dict.fromkeys(e.subject for e in reversed(received)))
    for event in reversed(journal.run_page(run_id, limit=SUMMARY_ITEMS, newest=True,
                                           kinds=("run.outcome",))):
        _outcome(summary, event)
    row = journal.run_state_row(run_id)
    if row is None:  # nothing decided yet
        return summary
    last_proposal, last_status, open_tasks, waiting, workflow, finished = row
    if last_status and (summary.last is None or summary.last[:2] != (last_proposal,
                                                                     last_status)):
        # the run's last counted outcome is older than the newest read (refused reuses)
        last = journal.latest_outcome(run_id, last_proposal)
        summary.last = None
        if last is not None:
            reasons = last.payload["outcome"].get("reasons", [])
            summary.last = (last_proposal, last_status, [str(r) for r in reasons])
    if open_tasks:
        tasks, _ = journal.human_tasks(run_id=run_id, limit=SUMMARY_ITEMS)
        summary.human_tasks = [str(opened.payload["task_id"]) for opened, _ in tasks]
    if workflow:
        started = (first if first[0].kind == "workflow.started" else
                   journal.run_page(run_id, limit=1, kinds=("workflow.started",)))
        summary.workflow = str(started[0].payload.get("workflow")) if started else None
    summary.finished = finished or None
    if finished == "workflow.failed":  # a person's cancel? its end, one row
        _cancel_of(summary, run_end(journal, run_id))
    if waiting and not finished:
        for request in journal.open_step_requests(run_id=run_id)[0]:
            summary.waiting_steps[str(request.payload["step"])] = [
                str(r) for r in request.payload.get("reasons", [])]
    return summary


def show_run(journal: Journal, run_id: str, *, limit: int = EVENTS_PAGE, after_seq: int = 0
             ) -> tuple[RunSummary, list[AuditEvent]]:
    """A run's summary (:func:`read_summary`) and one page of its events: at most ``limit``
    (1 to :data:`MAX_EVENTS_PAGE`) after the seq ``after_seq``, oldest first. There are
    more when the page's last seq is below :attr:`RunSummary.last_seq` (:func:`more`)."""
    if not 1 <= limit <= MAX_EVENTS_PAGE:
        raise InputError(f"`limit`: `{limit}` is not between 1 and {MAX_EVENTS_PAGE}")
    if not 0 <= after_seq <= MAX_PAGE_INTEGER:
        raise InputError(f"`after_seq`: `{after_seq}` is not between 0 and "
                         f"{MAX_PAGE_INTEGER}")
    summary = read_summary(journal, run_id)
    return summary, journal.run_page(run_id, limit=limit, after_seq=after_seq)


def shown_timeline(journal: Journal, run_id: str, events: list[AuditEvent]
                   ) -> list[dict[str, Any]]:
    """A page of a run's events as ``runs show`` prints them: each event's JSON form with
    the secret arguments of its tool masked (:mod:`cradle_kg.redaction`), as the run's
    proposals named them — those on the page and the newest :data:`SECRETS_LOOKBACK` of
    the run's proposals that name secret arguments (the journal itself keeps the values:
    ``audit``, ``journal copy``). Before, the newest :data:`SECRETS_LOOKBACK` proposals of
    every kind: a long run pushed an early secret out of them, and a page quoting it (the
    person's request) printed it in clear (``tests/security/test_147``)."""
    by_tool, values = _run_secrets(journal, run_id, events)
    return [mask_payload(e.model_dump(mode="json"), by_tool, values) for e in events]


def _run_secrets(journal: Journal, run_id: str, events: list[AuditEvent]
                 ) -> tuple[dict[str, frozenset[str]], tuple[str, ...]]:
    received = journal.run_page(run_id, limit=SECRETS_LOOKBACK, newest=True,
                                kinds=("proposal.received",), marked=True)
    return secrets_by_tool(e.payload for e in [*events, *received])


def shown_events(journal: Journal, run_id: str, events: list[AuditEvent]
                 ) -> list[AuditEvent]:
    """A page of a run's events with their payloads as :func:`shown_timeline` shows them
    (secret arguments and values masked): what the run view's lanes are drawn from. The
    lanes quoted a tool's error (``the directory refused Hunter2-Sekret-77``) and a
    verifier's detail as the journal holds them, in clear where ``runs show`` masks them
    (``tests/security/test_148``)."""
    by_tool, values = _run_secrets(journal, run_id, events)
    return [e.model_copy(update={"payload": mask_payload(e.payload, by_tool, values)})
            for e in events]


def more(summary: RunSummary, events: list[AuditEvent]) -> bool:
    """Whether the run has events after this page of them."""
    return bool(events) and events[-1].seq < summary.last_seq


def page_fields(summary: RunSummary, events: list[AuditEvent], limit: int) -> dict[str, Any]:
    """What a page of a run's events says about the others (the API's, the CLI's)."""
    return {"events_total": summary.events, "limit": limit, "more": more(summary, events),
            "next_after_seq": events[-1].seq if more(summary, events) else None}


def summary_of(journal: Journal, run_id: str) -> dict[str, Any]:
    return read_summary(journal, run_id).to_dict()


def state_and_why(journal: Journal, run_id: str) -> tuple[RunState, list[str]]:
    """A run's state and :meth:`RunSummary.why`, without folding its events: the derived
    ``run_state`` row (no event decoded), then only what ``why`` names — the open human
    tasks, the waiting steps' requests (``open_steps``), or the last outcome (one row).
    A workflow run's status reads this: its agent grows the run at will (before, every
    event of it was decoded at each status: ``tests/security/test_91``)."""
    row = journal.run_state_row(run_id)
    proposal, status, tasks, waiting, workflow, finished = row or ("", "", 0, 0, 0, "")
    state = state_of((int(tasks > 0), finished, int(waiting > 0), status,
                      int(proposal.startswith("comp:")), workflow))
    if state is RunState.ESCALATED:
        opened, _ = journal.human_tasks(run_id=run_id)
        return state, [f"human task `{o.payload['task_id']}` is open" for o, _ in opened]
    if waiting:
        steps: dict[str, list[str]] = {}
        for ev in journal.open_step_requests(run_id=run_id)[0]:
            steps[str(ev.payload["step"])] = [str(r) for r in ev.payload.get("reasons", [])]
        return state, [f"step `{s}` waits for a person" + (f": {'; '.join(r)}" if r else "")
                       for s, r in steps.items()]
    if finished == "workflow.failed":
        cancel = cancelled_by(run_end(journal, run_id))
        if cancel is not None:
            return state, [_cancel_line(*cancel)]
    if not status:
        return state, []
    last = journal.latest_outcome(run_id, proposal)
    reasons = [] if last is None else [str(r) for r in
                                       last.payload["outcome"].get("reasons", [])]
    return state, [f"`{proposal}`: {status}" + (f": {'; '.join(reasons)}" if reasons else "")]
