"""Budgets are objects: spending limits at three levels, kept in the journal.

=============  ============================================  =========================
level          subject                                       spend counted over
=============  ============================================  =========================
tenant         the client (``Workflow.tenant``)              every run of that tenant
workflow       the process (``Workflow.id``)                 every run of that workflow
invocation     one run (``*`` = each run separately)         that run
=============  ============================================  =========================

A budget is set by a ``budget.set`` event (the latest one per level and subject wins).
Spend is the sum of the declared ``cost`` of ``model.called`` events. Before each model
call every applicable budget is checked and the **strictest** one decides: at 100 % the
call is refused with ``budget_exceeded_<level>`` and a human task is opened; after a
call, crossing 80 % of a budget journals one ``budget.alert``. There is no fallback: a
refused call is not retried on a cheaper model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import BudgetExceededError
from ..storage import Journal, NewEvent

BUDGET_RUN = "budgets"
Level = Literal["tenant", "workflow", "invocation"]
LEVELS: tuple[Level, ...] = ("tenant", "workflow", "invocation")


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
        latest: dict[str, Budget] = {}
        for event in self.journal.events_of_kind("budget.set"):
            budget = Budget.model_validate(event.payload["budget"])
            latest[budget.key] = budget
        return list(latest.values())

    def set_event(self, budget: Budget, *, by: str, now: datetime) -> NewEvent:
        return NewEvent(run_id=BUDGET_RUN, kind="budget.set", subject="budget:" + budget.key,
                        actor=by, at=now, payload={"budget": budget.model_dump(mode="json")})

    def _spent(self, level: Level, subject: str) -> float:
        total = 0.0
        for event in self.journal.events_of_kind("model.called"):
            p = event.payload
            charged = {"tenant": p.get("tenant"), "workflow": p.get("workflow"),
                       "invocation": event.run_id}[level]
            if charged == subject:
                total += float(p.get("cost", 0.0))
        return total

    def standings(self, scope: Scope) -> list[Standing]:
        out = []
        for budget in self.budgets():
            subject = scope.subject(budget.level)
            if budget.subject in ("*", subject):
                out.append(Standing(budget, subject, self._spent(budget.level, subject)))
        return out

    def check(self, scope: Scope, cost: float) -> None:
        """Raise :class:`BudgetExceededError` for the strictest budget this call would break."""
        over = [s for s in self.standings(scope) if s.spent + cost > s.budget.limit]
        if not over:
            return
        worst = min(over, key=lambda s: (s.remaining, LEVELS.index(s.budget.level)))
        b = worst.budget
        raise BudgetExceededError(
            f"budget exceeded: {b.level} `{worst.subject}` has spent {worst.spent:g} of "
            f"{b.limit:g}; this call costs {cost:g}", reason_code=f"budget_exceeded_{b.level}")

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


def alert_event(standing: Standing, *, run_id: str, actor: str, now: datetime) -> NewEvent:
    b = standing.budget
    return NewEvent(run_id=run_id, kind="budget.alert",
                    subject=f"budget:{b.level}:{standing.subject}", actor=actor, at=now,
                    payload={"budget": b.model_dump(mode="json"), "subject": standing.subject,
                             "spent": standing.spent,
                             "ratio": round(standing.spent / b.limit, 4) if b.limit else 1.0})
