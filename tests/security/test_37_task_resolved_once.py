"""A human task is resolved once, whoever closes it at the same moment.

Finding (the pattern of ``test_32``, on escalations): ``tasks resolve`` (and ``POST
/api/tasks/{task}/resolve``) read the task, checked it was open, authenticated the
person, then appended ``human_task.resolved``. Two people closing it together both
passed the check: the journal held two resolutions of one task, each person was shown
their own note as the task's resolution, and then the task's record (``open_tasks``
folds the resolutions by task id: the last wins) kept only the later one — the other
person's account of what was done to the target vanished from every view (``tasks list
--all``, the inbox, the API). The resolution is now
written only over the task's events it was read with (``if_last`` on the task's
subject): of two racing closes exactly one is journaled, the other is refused
("already resolved").

The race is made deterministic: the first close is held after its check (at its
authentication) while the second one closes the task in full, from another runtime.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.errors import InputError
from tests.conftest import make_config, proposal, register_test_tools

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_two_closes_at_once_journal_one(home: Path) -> None:
    with Runtime(home, config=make_config()) as first, \
            Runtime(home, config=make_config()) as second:
        register_test_tools(first)
        out = first.submit(proposal("p", "test.wide", {}, agent="agent:tester",
                                    target="test:1"))
        assert out.status is OutcomeStatus.VERIFICATION_FAILED  # a human task is open
        (task,) = [e.payload["task_id"] for e in first.journal.events()
                   if e.kind == "human_task.opened"]
        check = first.approvals.authenticate
        raced: list[Any] = []

        def held(by: str, token: str) -> None:
            check(by, token)
            if not raced:  # the first close passed its check: the second lands now
                raced.append(second.resolve_task(task, by=APPROVER,
                                                 token=DEMO_TOKENS[APPROVER],
                                                 note="second: rolled back by hand"))

        first.approvals.authenticate = held  # type: ignore[method-assign]
        with pytest.raises(InputError, match="already resolved"):
            first.resolve_task(task, by=APPROVER, token=DEMO_TOKENS[APPROVER],
                               note="first: left as it was")
        notes = [e.payload["note"] for e in first.journal.events()
                 if e.kind == "human_task.resolved"]
        assert notes == ["second: rolled back by hand"]
