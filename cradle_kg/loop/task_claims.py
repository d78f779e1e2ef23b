"""Whose a task is, where a ``task`` limit counts it: the agent that used it first.

A limit of scope ``task`` counts every call naming a task id, and at the entry points an
agent reaches with its own credentials the agent writes that id: MCP's ``cradle-kg/task``
(over streamable HTTP, with the agent's own token), ``POST /api/proposals``, a proposal
file given to ``cradle-kg submit``. Before, another agent that named the task a host gave
an agent spent that task's limit: the owner's next call was denied (``rate_limit_task``)
and the journal counted the other agent's calls in the owner's task
(``tests/security/test_376``).

Now, as a run is (:func:`~cradle_kg.loop.runtime.check_run_owner`), a task under a
``task`` limit is its first agent's at those entry points: the first proposal that will
be written claims it (a ``task.claimed`` event whose key, ``task-claim:<task id>``, the
journal holds once, so of two agents racing for a new task one claim is written), and
another identity naming it is refused (:class:`~cradle_kg.errors.TaskOwnershipError`),
nothing journaled. A task no ``task`` limit counts is claimed by nobody: its id is a
label, and several agents may share it. The host's own code (``Runtime.submit`` in
process) may still run several agents in one task, as in one run.
"""

from __future__ import annotations

from datetime import datetime

from ..config import RuntimeConfig
from ..errors import TaskOwnershipError
from ..storage import Journal, NewEvent
from .context import TASK_CLAIM_PREFIX
from .gate1.limits import counts_task
from .proposal import run_namespace_owner

#: the event an entry point writes to make a task under a ``task`` limit its agent's
TASK_CLAIMED = "task.claimed"


def task_owner(journal: Journal, task_id: str) -> str | None:
    """The agent that claimed ``task_id`` (None: nobody has)."""
    claim = journal.event_for_key(TASK_CLAIM_PREFIX + task_id)
    return None if claim is None else claim.actor


def task_limited(config: RuntimeConfig, *, agent_id: str, task_id: str) -> bool:
    """Whether a ``task`` limit of ``config`` counts ``agent_id``'s calls naming
    ``task_id``."""
    agent = config.agent(agent_id)
    return agent is not None and counts_task(config.limits, agent=agent, task_id=task_id)


#: what an agent whose task is refused can do, for a proposal's task
TASK_HINT = ("name a task of your own (an MCP or LangGraph session that names none has its "
             "run for task: leave `cradle-kg/task` out)")


def check_task_owner(journal: Journal, task_id: str, agent_id: str, *,
                     hint: str = TASK_HINT) -> str | None:
    """Raise :class:`~cradle_kg.errors.TaskOwnershipError` — before anything is journaled —
    when another agent claimed ``task_id``, or it is in another identity's namespace;
    returns the task's agent, or None (nobody's yet). ``hint``: what the refused caller can
    do instead (a workflow start names its run, not a task).

    INVARIANT: a task in ``run:<identity>/…`` (:func:`run_namespace_owner`: a session's own
    task, its run id) is that identity's alone, claimed or not: a graph thread's task was
    ``lg-<thread id>``, guessable, and another agent that named it first had every call of
    the thread refused (``tests/security/test_392``, as ``test_235`` for its run)."""
    space = run_namespace_owner(task_id)
    owner = task_owner(journal, task_id) if space is None else space
    if owner is not None and owner != agent_id:
        whose = (f"it is in that identity's namespace (`run:{owner}/…`)" if space is not None
                 else "a task a `task` limit counts is the agent's that used it first")
        raise TaskOwnershipError(
            f"`task_id`: task `{task_id}` belongs to `{owner}`: {whose}; another agent "
            "naming it would spend that agent's limit",
            hint=hint)
    return owner


def task_claim(task_id: str, *, run_id: str, agent_id: str, at: datetime) -> NewEvent:
    """The claim of ``task_id`` for ``agent_id``, journaled in the run of its proposal."""
    return NewEvent(run_id=run_id, kind=TASK_CLAIMED, subject=TASK_CLAIM_PREFIX + task_id,
                    actor=agent_id, at=at, payload={"task_id": task_id, "agent_id": agent_id},
                    idem_key=TASK_CLAIM_PREFIX + task_id)
