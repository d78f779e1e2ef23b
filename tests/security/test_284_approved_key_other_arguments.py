"""A key whose approval is given but whose action has not run yet is no way to another.

Finding (left open by ``test_254``): other arguments under an agent's idempotency key are
denied ``idempotency_conflict`` while the key's approval waits (``test_254``) and once its
action ran (the key's intent) — but not in between. An approval a person *approved* whose
action has not run yet — decided from a process that does not hold the tool (an MCP
proxy's upstream tool, run when that process reads the decision), or the process ended
between the decision and the run — is no longer undecided, and the key has no intent
yet: a proposal under the key with other arguments (closing ``acct-8`` under ``close-9``,
whose approval was given for ``acct-9``) opened a request of its own, and the approvers
were asked about a second action under a key whose first was already approved.

Now a key's approval that a person approved and whose action has not run is the
pending case's conflict too: other arguments under it are denied ``idempotency_conflict``,
journaled as the other cases, nobody asked; the approved action still runs once when
its run is walked on (and the same arguments run it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Outcome, Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus

from .mcp_http import two_agent_home
from .test_236_pending_key_asks_once import _close, _requests
from .test_250_starting_runs_derived import _sql

pytestmark = pytest.mark.usefixtures("journal_backend")


@pytest.fixture
def keyed_home(tmp_path: Path) -> Path:
    return two_agent_home(tmp_path / "home")


def _conflict(out: Outcome) -> bool:
    return (str(out.status) == "denied" and out.decision is not None
            and "idempotency_conflict" in out.decision.reason_codes)


def _intents(rt: Runtime) -> list[str]:
    return [str(e.payload["input_hash"]) for e in rt.journal.events()
            if e.kind == "action.intent"]


def _approve(rt: Runtime, approval_id: str, *, resume: bool) -> Outcome | None:
    _, outcome = rt.decide_approval(approval_id, approver_id=APPROVER,
                                    token=DEMO_TOKENS[APPROVER],
                                    status=ApprovalStatus.APPROVED, resume=resume)
    return outcome


def test_other_arguments_under_an_approved_key_not_yet_run_are_refused(keyed_home: Path) -> None:
    with Runtime(keyed_home) as rt:
        first = rt.submit(_close("p1"))
        assert first.approval is not None
        assert _approve(rt, first.approval.id, resume=False) is None  # approved, not run
        assert _intents(rt) == [] and _unrun(rt) == [first.approval.id]
        other = rt.submit(_close("p2", account="acct-8"))
        assert _conflict(other), other  # before: awaiting_approval, a request of its own
        assert _requests(rt) == 1
        # in another run of the agent too, as the waiting key's (test_254)
        assert _conflict(rt.submit(_close("p3", account="acct-7", run="run:other")))
        assert _requests(rt) == 1 and _intents(rt) == []
        # the approved action still runs once, when its run is walked on
        [ran] = rt.resume("run:alice")
        assert str(ran.status) == "executed", ran
        assert _intents(rt) == [first.approval.action_digest] and _unrun(rt) == []
        assert rt.journal.verify().intact  # the derived rows, as the events derive them


def test_decided_where_the_tool_is_not_held(keyed_home: Path) -> None:
    """Approved from a process that does not hold the tool (here: a runtime that loaded no
    pack): recorded there, run where the tool is."""
    with Runtime(keyed_home) as rt:
        first = rt.submit(_close("p1"))
        assert first.approval is not None
        with Runtime(keyed_home, load_plugins=False) as elsewhere:
            assert _approve(elsewhere, first.approval.id, resume=True) is None
        assert _intents(rt) == []
        assert _conflict(rt.submit(_close("p2", account="acct-8")))
        assert _requests(rt) == 1
        same = rt.submit(_close("p4"))  # the key's own arguments run the approved action
        assert str(same.status) == "executed", same
        assert _intents(rt) == [first.approval.action_digest] and _unrun(rt) == []
        assert rt.journal.verify().intact


def test_an_older_journal_derives_what_was_approved_and_not_run(keyed_home: Path) -> None:
    """A journal written before the derived table (SQLite format 11, PostgreSQL
    migration 13) gets it from its events when opened (SQLite) or migrated."""
    with Runtime(keyed_home) as rt:
        first = rt.submit(_close("p1"))
        assert first.approval is not None
        _approve(rt, first.approval.id, resume=False)
        target = _older(rt)
    if target.startswith("postgresql"):
        from cradle_kg.storage.pg_admin import migrate

        assert migrate(target) == [(14, "unrun-approvals"),
                                   (15, "append-run-end-guard"), (16, "append-approval-guard"),
                                   (17, "decided-subject-index"), (18, "lineage-written"),
                                   (19, "server-seconds"), (20, "server-times")]
    with Runtime(keyed_home) as rt:
        assert _unrun(rt) == [first.approval.id]
        assert _conflict(rt.submit(_close("p2", account="acct-8")))
        assert rt.journal.verify().intact


def _target(rt: Runtime) -> str:
    """The journal's file or URL (unredacted: the test's own scratch database)."""
    url = getattr(rt.journal, "url", None)
    return url if isinstance(url, str) else rt.journal.location


def _unrun(rt: Runtime) -> list[str]:
    return [str(r[0]) for r in _sql(_target(rt))("SELECT approval_id FROM unrun_approvals")]


def _older(rt: Runtime) -> str:
    """The journal as a cradle-kg before the table left it: its target."""
    target = _target(rt)
    sql = _sql(target)
    sql("DROP TABLE unrun_approvals")
    if target.startswith("postgresql"):
        sql("DROP INDEX events_subject_decided")  # migration 17's
        sql("DROP TABLE lineage_written")  # migration 18's
        sql("DROP TABLE intent_seconds")  # migration 19's
        sql("DROP TABLE server_times")  # migration 20's
        sql("DELETE FROM schema_migrations WHERE version >= 14")
    else:
        sql("PRAGMA user_version = 11")
    return target
