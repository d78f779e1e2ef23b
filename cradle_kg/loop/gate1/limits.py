"""Cost and rate limits (gate 1, check 9): per agent, task, tenant or globally, per window.

Counts come from the journal itself (``action.intent`` events), so a limit holds across
processes and restarts. Every applicable limit is checked; the strictest one that is
exceeded is reported, with an explicit reason code.

Gate 1 reads the counts before the intent is written, outside the journal's writer lock:
two workers at ``max_calls - 1`` would both pass. So every applicable limit also travels
with the intent as a :class:`~cradle_kg.storage.UsageCap` (:func:`usage_caps`), which the
journal checks again in the append's serialised transaction; an append that would exceed
one writes nothing and the proposal is evaluated again — and denied here, by the count
that now includes the other worker's intent. Both read a window the same way
(:meth:`~cradle_kg.storage.Journal.usage_within`): on PostgreSQL the seconds up to the
journal server's clock, in which each intent was counted when appended, so that workers
whose clocks are apart count in one window (``tests/security/test_549``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from ...config import Limit
from ...records import Agent
from ...storage import Journal, UsageCap

_FIELD = {"agent": "agent", "task": "task_id", "tenant": "tenant"}


def _applies(limit: Limit, *, agent: Agent, task_id: str, tenant: str) -> str | None:
    """The subject this limit counts for, "" for a global limit, None if it does not apply."""
    if limit.scope == "global":
        return ""
    subject = {"agent": agent.id, "task": task_id, "tenant": tenant}[limit.scope]
    if limit.subject not in ("*", subject):
        return None
    return subject


def counts_task(limits: Sequence[Limit], *, agent: Agent, task_id: str) -> bool:
    """Whether a limit of scope ``task`` counts ``agent``'s calls naming ``task_id``
    (:mod:`cradle_kg.loop.task_claims`)."""
    return any(limit.scope == "task" and _applies(limit, agent=agent, task_id=task_id,
                                                  tenant=agent.tenant) is not None
               for limit in limits)


def usage_caps(limits: Sequence[Limit], *, now: datetime, agent: Agent, task_id: str,
               tenant: str) -> tuple[UsageCap, ...]:
    """Every applicable limit, as the cap the journal checks under its writer's lock."""
    caps: list[UsageCap] = []
    for limit in limits:
        subject = _applies(limit, agent=agent, task_id=task_id, tenant=tenant)
        if subject is None or (limit.max_calls is None and limit.max_cost is None):
            continue
        caps.append(UsageCap(scope=_FIELD.get(limit.scope, "*"), subject=subject,
                             since=now - timedelta(seconds=limit.window_seconds),
                             max_calls=limit.max_calls, max_cost=limit.max_cost,
                             window=float(limit.window_seconds)))
    return tuple(caps)


def limit_violation(limits: Sequence[Limit], *, journal: Journal, now: datetime, agent: Agent,
                    task_id: str, tenant: str, cost: float) -> tuple[str, str] | None:
    worst: tuple[float, str, str] | None = None
    for limit in limits:
        subject = _applies(limit, agent=agent, task_id=task_id, tenant=tenant)
        if subject is None:
            continue
        field = _FIELD.get(limit.scope)
        # the window as the cap reads it under the append lock: on PostgreSQL, up to the
        # server's clock (tests/security/test_549)
        used, spent = journal.usage_within(field=field, value=subject or None,
                                           window=float(limit.window_seconds), now=now)
        if limit.max_calls is not None and used + 1 > limit.max_calls:
            headroom = limit.max_calls / limit.window_seconds
            message = (f"rate limit reached: {limit.scope} `{subject or '*'}` made {used} call(s) "
                       f"in {limit.window_seconds}s, limit {limit.max_calls}")
            if worst is None or headroom < worst[0]:
                worst = (headroom, f"rate_limit_{limit.scope}", message)
        if limit.max_cost is not None and spent + cost > limit.max_cost:
            headroom = limit.max_cost / limit.window_seconds
            message = (f"cost limit reached: {limit.scope} `{subject or '*'}` would spend "
                       f"{spent + cost:g} in {limit.window_seconds}s, limit {limit.max_cost:g}")
            if worst is None or headroom < worst[0]:
                worst = (headroom, f"cost_limit_{limit.scope}", message)
    return None if worst is None else (worst[1], worst[2])
