"""Budgets are objects: spending limits at three levels, kept in the journal.

=============  ============================================  =========================
level          subject                                       spend counted over
=============  ============================================  =========================
tenant         the client (``Workflow.tenant``)              every run of that tenant
workflow       the process (``Workflow.id``)                 every run of that workflow
invocation     one run (``*`` = each run separately)         that run
=============  ============================================  =========================

A budget is set by a ``budget.set`` event (the latest one per level and subject wins).

**Charged at reservation.** Before each model call attempt the engine checks every
applicable budget — the **strictest** one decides: at 100 % the call is refused with
``budget_exceeded_<level>`` and a human task is opened — and then appends a
``model.reserved`` event (the step, attempt, model, declared ``cost``, tenant and
workflow) *before* it calls the model. The reservation is the charge: spend is the sum of
the declared ``cost`` of ``model.reserved`` events (and of ``model.called`` events
journaled without a reservation, by a cradle-kg before this one; a call made since says
``"reserved": true`` and is not charged twice). A reserved call whose model then fails
(``model_unavailable``) stays charged: conservative, never under.

**Across workers.** The reservation carries one :class:`~cradle_kg.storage.UsageCap` per
applicable budget (its usage scope ``budget.<level>``, its subject, ``since`` =
:data:`~cradle_kg.storage.BEGINNING`, ``max_cost`` = the limit), re-checked by the journal
under its writer's lock: two workers on runs of one tenant at ``limit - cost`` both pass
the check, and the second reservation writes nothing (``LimitReached``); that worker
reads again and is refused — or, if a budget was raised meanwhile, tries again (at most
:data:`RESERVE_TRIES` times, then the step stops with an error, nothing charged or
called; ``advance`` resumes it). Spend never exceeds a limit, whatever the workers.

A run says how its calls are charged in its ``workflow.started`` (``"budgets":
"reserved"``). A run recorded by a cradle-kg before this one has no such key: its calls
are checked and then charged by their ``model.called``, as when it was recorded, so its
strict replay reproduces it; advanced by several workers at once, such a run can still
pass a budget by the calls in flight.

**Read from derived state.** Spend is kept by the journal in its ``usage`` buckets (scopes
``budget.tenant`` / ``budget.workflow`` / ``budget.invocation``), in the transaction
that appends the reservation — re-derivable from the events and compared row by row by
``audit verify`` — and read as a running total (:meth:`~cradle_kg.storage.Journal.
usage_total`: two index probes per budget), never by folding ``model.called`` events:
a check costs the same in a journal of any size. After a call, crossing 80 % of a budget
journals one ``budget.alert``. There is no fallback: a refused call is not retried on a
cheaper model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import BudgetExceededError
from ..storage import BEGINNING, BUDGET_SCOPES, Journal, NewEvent, UsageCap
from ..tools import MAX_CALL_COST as MAX_CALL_COST  # a model call's, as a tool's (test_509)
from ..tools import cost_problem as cost_problem

BUDGET_RUN = "budgets"
Level = Literal["tenant", "workflow", "invocation"]
LEVELS: tuple[Level, ...] = ("tenant", "workflow", "invocation")
#: how many times a reservation is tried when other workers' reservations reach a budget
#: first (re-read and re-checked each time) before the step stops with an error
RESERVE_TRIES = 3
#: the approvers' scope that sets budgets (``budgets set``), beside ``*``
BUDGETS_SCOPE = "budgets"
#: ``workflow.started``'s ``budgets``: the run's model calls are charged at reservation
RESERVED = "reserved"


class Budget(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    level: Level
    #: the tenant, workflow or run it applies to; ``*`` for each one separately
    subject: str = "*"
    limit: float = Field(ge=0)
    alert_ratio: float = Field(default=0.8, gt=0, le=1)

    @property
    def key(self) -> str:
        return f"{self.level}:{self.subject}"


@dataclass(frozen=True)
class Scope:
    """Who is spending: the three subjects a call is charged to."""

    tenant: str
    workflow: str
    run_id: str

    def subject(self, level: Level) -> str:
        return {"tenant": self.tenant, "workflow": self.workflow, "invocation": self.run_id}[level]


@dataclass(frozen=True)
class Standing:
    budget: Budget
    subject: str
    spent: float

    @property
    def remaining(self) -> float:
        return self.budget.limit - self.spent


class BudgetBook:
    """Reads budgets and spend from the journal; builds the events to append."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def budgets(self) -> list[Budget]:
        """The budgets in force: the newest ``budget.set`` of each key, in the order the
        keys were first set (the derived ``budget_sets``: one row per budget decoded, at
        every model call — not every budget ever set, ``tests/security/test_84``)."""
        latest: dict[str, Budget] = {}
        for event in self.journal.latest_budget_sets():
            budget = Budget.model_validate(event.payload["budget"])
            latest[budget.key] = budget
        return list(latest.values())

    def set_event(self, budget: Budget, *, by: str, now: datetime) -> NewEvent:
        return NewEvent(run_id=BUDGET_RUN, kind="budget.set", subject="budget:" + budget.key,
                        actor=by, at=now, payload={"budget": budget.model_dump(mode="json")})

    def spent(self, level: Level, subject: str) -> float:
        """What ``subject`` has been charged at ``level``, from the journal's derived usage
        buckets (two index probes; see the module docstring)."""
        return self.journal.usage_total(BUDGET_SCOPES[level], subject)[1]

    def top(self, level: Level) -> tuple[str, float] | None:
        """The subject that has been charged the most at ``level``, and how much."""
        found = self.journal.usage_top(BUDGET_SCOPES[level])
        return None if found is None else (found[0], found[2])

    def standings(self, scope: Scope) -> list[Standing]:
        out = []
        for budget in self.budgets():
            subject = scope.subject(budget.level)
            if budget.subject in ("*", subject):
                out.append(Standing(budget, subject, self.spent(budget.level, subject)))
        return out

    def check(self, scope: Scope, cost: float) -> None:
        """Raise :class:`BudgetExceededError` for the strictest budget this call would break."""
        _refuse_over(self.standings(scope), cost)

    def reserve(self, scope: Scope, cost: float) -> tuple[UsageCap, ...]:
        """:meth:`check`, then the caps a reservation of ``cost`` carries: one per
        applicable budget, checked again by the journal under its writer's lock."""
        standings = self.standings(scope)
        _refuse_over(standings, cost)
        return tuple(dict.fromkeys(
            UsageCap(scope=BUDGET_SCOPES[s.budget.level], subject=s.subject, since=BEGINNING,
                     max_cost=s.budget.limit) for s in standings))

    def alerts(self, scope: Scope, *, run_events: Sequence[NewEvent] = ()) -> list[Standing]:
        """Budgets at or past their alert ratio that have not alerted yet (since last set)."""
        out = []
        for standing in self.standings(scope):
            b = standing.budget
            if standing.spent < b.alert_ratio * b.limit:
                continue
            subject = f"budget:{b.level}:{standing.subject}"
            last_set = max((e.seq for e in self.journal.events_for_subject("budget:" + b.key)
                            if e.kind == "budget.set"), default=0)
            done = any(e.kind == "budget.alert" and e.seq > last_set
                       for e in self.journal.events_for_subject(subject))
            if not done and not any(e.subject == subject for e in run_events):
                out.append(standing)
        return out


def _refuse_over(standings: Sequence[Standing], cost: float) -> None:
    over = [s for s in standings if s.spent + cost > s.budget.limit]
    if not over:
        return
    worst = min(over, key=lambda s: (s.remaining, LEVELS.index(s.budget.level)))
    b = worst.budget
    raise BudgetExceededError(
        f"budget exceeded: {b.level} `{worst.subject}` has spent {worst.spent:g} of "
        f"{b.limit:g}; this call costs {cost:g}", reason_code=f"budget_exceeded_{b.level}")


def reservation_event(scope: Scope, caps: tuple[UsageCap, ...], *, step: str, attempt: int,
                      model: str, cost: float, actor: str, now: datetime) -> NewEvent:
    """The charge of one model call attempt, appended before the call (see the module)."""
    return NewEvent(run_id=scope.run_id, kind="model.reserved",
                    subject=f"step:{scope.run_id}/{step}", actor=actor, at=now,
                    payload={"step": step, "attempt": attempt, "model": model, "cost": cost,
                             "tenant": scope.tenant, "workflow": scope.workflow}, caps=caps)


def alert_event(standing: Standing, *, run_id: str, actor: str, now: datetime) -> NewEvent:
    b = standing.budget
    return NewEvent(run_id=run_id, kind="budget.alert",
                    subject=f"budget:{b.level}:{standing.subject}", actor=actor, at=now,
                    payload={"budget": b.model_dump(mode="json"), "subject": standing.subject,
                             "spent": standing.spent,
                             "ratio": round(standing.spent / b.limit, 4) if b.limit else 1.0})
