"""What the inbox's tasks and the repair budget read does not grow with the journal.

Finding (issue 17, "never folded from the start on a read"): ``open_tasks`` — the inbox's
tasks (``GET /api/inbox``, polled every 3 s by the web page, and ``/api/overview``) and
``tasks list`` — decoded every ``human_task.opened`` and every ``human_task.resolved``
event of the journal on each read, the closed tasks of every run as well as the open
ones; and ``repairs_in_run``, asked at every proposal sent back for repair, decoded every
event of the run (a long run — an MCP session is one run — made each repair dearer, and
the repairs of one run quadratic).

Now both read state derived in the append's own transaction (:mod:`cradle_kg.storage.
tasks_sql`: ``human_tasks``, one row per task opened with the seq of its resolution, and
``repairs``, a count per run), rebuilt from the events when an older journal is opened or
migrated, and compared row by row by ``audit verify``. Counted as the event rows the
journal decodes (not time: the machine is shared), on both journals.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Proposal, Runtime, Verdict
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.inbox import inbox
from cradle_kg.loop.escalation import open_tasks, repairs_in_run, task_page
from cradle_kg.loop.gate1.findings import Finding
from cradle_kg.storage import SqliteJournal, tasks_sql
from tests.conftest import proposal
from tests.workflow.conftest import wf_home  # noqa: F401

from .test_32_human_step_decided_once import FLOW
from .test_73_task_resolve_reads import _escalate as escalate

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def _always_repair(p: Proposal, spec: object) -> list[Finding]:
    return [Finding(code="odd", message="repair it", verdict=Verdict.REPAIR)]


def _odd_repair(p: Proposal, spec: object) -> list[Finding]:
    amount = p.action.arguments.get("amount")
    if isinstance(amount, int) and amount % 2:
        return [Finding(code="odd", message="repair it", verdict=Verdict.REPAIR)]
    return []


def _escalate(rt: Runtime, n: int, *, run: str) -> list[str]:
    """Proposals of run ``run`` sent back for repair (by the caller's validator) until
    ``n`` human tasks are open: test_73's."""
    return escalate(rt, n, run=run, register=False)


def _resolve(rt: Runtime, tasks: list[str]) -> None:
    for task in tasks:
        rt.resolve_task(task, by=APPROVER, token=DEMO_TOKENS[APPROVER], note="done by hand")


def _rows(decoded: Callable[[], int], read: Callable[[], object]) -> int:
    before = decoded()
    read()
    return decoded() - before


@pytest.mark.parametrize("closed", [10, 40])
def test_the_inbox_decodes_the_open_tasks_only(rt: Runtime, decoded: Callable[[], int],
                                               closed: int) -> None:
    rt.register_validator("demo.ledger.credit", _always_repair, name="always")
    done = _escalate(rt, closed, run="old")
    _resolve(rt, done)
    waiting = _escalate(rt, 2, run="new")
    assert len(waiting) == 2
    # the inbox's tasks: the two open ones, whatever was closed before them (the old fold
    # decoded every opening and every resolution: 2 * closed + 2 rows)
    rows = _rows(decoded, lambda: open_tasks(rt.journal))
    assert rows == 2, f"listing 2 open tasks decoded {rows} rows with {closed} closed"
    rows = _rows(decoded, lambda: inbox(rt, kinds=("task",)))
    assert rows == 2, f"the inbox's tasks decoded {rows} rows with {closed} closed"
    assert [i.id for i in inbox(rt, kinds=("task",))] == waiting
    # one run's tasks: that run's, not the others'
    assert _rows(decoded, lambda: open_tasks(rt.journal, run_id="run:old")) == 0
    # a page of every task (``tasks list --all``): the page's openings and resolutions
    page, total = task_page(rt.journal, include_resolved=True, limit=5, offset=3)
    assert total == closed + 2 and [t.id for t in page] == done[3:8]
    assert all(t.resolved_by == APPROVER and t.resolution == "done by hand" for t in page)
    rows = _rows(decoded, lambda: task_page(rt.journal, include_resolved=True, limit=5))
    assert rows == 10, rows
    assert task_page(rt.journal, limit=1) == ([open_tasks(rt.journal)[0]], 2)
    assert rt.journal.verify().intact


@pytest.mark.parametrize("before", [5, 25])
def test_a_repair_reads_no_event_of_its_run(rt: Runtime, decoded: Callable[[], int],
                                            before: int) -> None:
    """The repair budget's count is one probe of ``repairs``: a run with many calls
    behind it costs its next repair no more than a fresh run's (the old count decoded
    every event of the run, about 6 per executed call)."""
    rt.register_validator("demo.ledger.credit", _odd_repair, name="odd")
    for i in range(before):  # executed calls in the run, then in another run
        assert rt.submit(proposal(f"ok{i}", "demo.ledger.credit", {"account": "a", "amount": 2},
                                  task_id="long")).status is OutcomeStatus.EXECUTED
        rt.submit(proposal(f"other{i}", "demo.ledger.credit", {"account": "a", "amount": 1},
                           task_id=f"other{i % 3}"))
    assert _rows(decoded, lambda: repairs_in_run(rt.journal, "run:long")) == 0
    assert repairs_in_run(rt.journal, "run:long") == 0
    assert repairs_in_run(rt.journal, "run:other0") == min(len(range(0, before, 3)),
                                                           rt.config.repair_budget)
    statuses = []
    for i in range(rt.config.repair_budget + 1):
        statuses.append(rt.submit(proposal(f"odd{i}", "demo.ledger.credit",
                                           {"account": "a", "amount": 1},
                                           task_id="long")).status)
        assert repairs_in_run(rt.journal, "run:long") == min(i + 1, rt.config.repair_budget)
    budget = rt.config.repair_budget
    assert statuses == [OutcomeStatus.REPAIR] * budget + [OutcomeStatus.ESCALATED]
    assert rt.journal.verify().intact


def _edit(rt: Runtime, sql: str) -> None:
    """Change a derived row behind the journal's back (as someone with the file would)."""
    journal = rt.journal
    if isinstance(journal, SqliteJournal):
        conn = sqlite3.connect(journal.path)
        conn.execute(sql)
        conn.commit()
        conn.close()
        return
    import psycopg

    with psycopg.connect(journal.url, autocommit=True) as pg:  # type: ignore[attr-defined]
        pg.execute(sql)


@pytest.mark.parametrize(("table", "edit"), [
    ("human_tasks", "UPDATE human_tasks SET resolved_seq = seq WHERE resolved_seq IS NULL"),
    ("human_tasks", "UPDATE human_tasks SET resolved_seq = NULL"),
    ("human_tasks", "DELETE FROM human_tasks WHERE seq = (SELECT MAX(seq) FROM human_tasks)"),
    ("repairs", "UPDATE repairs SET repairs = 0"),
    ("repairs", "DELETE FROM repairs"),
])
def test_audit_verify_reports_an_edited_derived_row(rt: Runtime, table: str, edit: str) -> None:
    rt.register_validator("demo.ledger.credit", _always_repair, name="always")
    tasks = _escalate(rt, 2, run="t")
    _resolve(rt, tasks[:1])
    assert rt.journal.verify().intact
    _edit(rt, edit)
    report = rt.journal.verify()
    assert not report.intact and f"`{table}`" in str(report.reason), report


def test_the_derived_rows_follow_every_way_a_task_is_written(tmp_path: Path) -> None:
    """Openings and resolutions the runtime does not write (a resolution in the opening's
    append, one about another subject, an opening after its task's resolution, a task id
    that is not text): the rows kept by the appends equal the rows derived from the
    events, on both journals, and the reads agree with them."""
    from datetime import UTC, datetime

    from cradle_kg.storage import NewEvent, journal_target, open_journal

    at = datetime(2026, 1, 1, tzinfo=UTC)

    def e(kind: str, subject: str, run: str = "run:x", **payload: Any) -> NewEvent:
        return NewEvent(run_id=run, kind=kind, subject=subject, actor="someone", at=at,
                        payload={"code": "c", "reason": "r", "about": "a", "note": "n",
                                 **payload})

    j = open_journal(journal_target(tmp_path / "journal.sqlite"))
    j.append([e("human_task.opened", "task:1", task_id="task:1"),
              e("human_task.resolved", "task:1", task_id="task:1")])
    j.append([e("human_task.opened", "task:2", task_id="task:2"),
              e("human_task.resolved", "elsewhere", task_id="task:2"),
              e("human_task.opened", "task:3", run="run:y", task_id=3)])
    j.append([e("human_task.opened", "task:1", task_id="task:1"),
              e("run.outcome", "action:1", outcome={"status": "repair"}),
              e("run.outcome", "action:2", outcome="repair")])
    assert [t.id for t in open_tasks(j)] == ["task:2"]
    assert [(t.id, t.resolved_by) for t in open_tasks(j, include_resolved=True)] == [
        ("task:1", "someone"), ("task:2", None), ("task:1", "someone")]
    assert j.run_repairs("run:x") == 1 and j.run_repairs("run:y") == 0
    assert j.verify().intact
    # human steps: answered in the request's own append, asked again after its run ended,
    # answered for another input; approvals: decided in their own append, decided about
    # another subject, requested twice with one id; a budget set twice in one append
    step = {"workflow": "w", "step": "s"}
    j.append([e("human.requested", "step:a", run="wf:a", input_hash="h1", **step),
              e("human.decided", "step:a", run="wf:a", input_hash="h1", **step),
              e("human.requested", "step:a", run="wf:a", input_hash="h2", **step),
              e("human.requested", "step:b", run="wf:b", input_hash="h1", **step),
              e("workflow.completed", "wf:b", run="wf:b"),
              e("human.requested", "step:b", run="wf:b", input_hash="h3", **step),
              e("human.requested", "step:c", run="wf:c", input_hash="h1", **step),
              e("human.decided", "step:c", run="wf:c", input_hash="h9", **step),
              # keys that are numbers (PostgreSQL's ``->>`` reads them as text)
              e("human.requested", "step:n", run="wf:n", workflow="w", step="1",
                input_hash="2"),
              e("human.decided", "step:n", run="wf:n", workflow="w", step=1, input_hash=2),
              e("human_task.opened", "7", run="wf:n", task_id="7"),
              e("human_task.resolved", "7", run="wf:n", task_id=7)])
    j.append([e("approval.requested", "approval:d1", approval={"id": "ap-1"}),
              e("approval.decided", "approval:d1", approval_id="ap-1"),
              e("approval.requested", "approval:d2", approval={"id": "ap-2"}),
              e("approval.decided", "approval:elsewhere", approval_id="ap-2"),
              e("approval.requested", "approval:d3", approval={"id": "ap-2"}),
              e("approval.requested", "approval:d4", approval={"id": "5"}),
              e("approval.decided", "approval:d4", approval_id=5),
              e("budget.set", "budget:tenant:a", budget={"level": "tenant", "limit": 1}),
              e("budget.set", "budget:tenant:a", budget={"level": "tenant", "limit": 2})])
    assert [(x.run_id, x.payload["input_hash"]) for x in j.open_step_requests()[0]] == [
        ("wf:a", "h2"), ("wf:c", "h1"), ("wf:n", "2")]
    assert [t.id for t in open_tasks(j, run_id="wf:n")] == ["7"]
    assert j.open_step_requests(run_id="wf:c")[0][0].payload["input_hash"] == "h1"
    assert [x.subject for x in j.approval_requests(undecided=True)[0]] == [
        "approval:d2", "approval:d4"]
    assert [x.payload["budget"]["limit"] for x in j.latest_budget_sets()] == [2]
    assert j.verify().intact
    j.close()


def test_a_journal_written_before_the_tables_gets_them_from_its_events(
        rt: Runtime, journal_backend: str) -> None:
    """A SQLite journal of format 6 is upgraded in place when opened; a PostgreSQL journal
    at migration 7 is refused until ``db migrate`` (migration 8) derives the tables: the
    same tasks and counts as the appends kept, and a journal that verifies."""
    rt.register_validator("demo.ledger.credit", _always_repair, name="always")
    tasks = _escalate(rt, 3, run="t")
    _resolve(rt, tasks[:1])
    journal = rt.journal
    kept = (open_tasks(journal, include_resolved=True), journal.run_repairs("run:t"))
    assert kept[1] == rt.config.repair_budget and len(kept[0]) == 3
    if isinstance(journal, SqliteJournal):
        path = journal.path
        rt.close()
        conn = sqlite3.connect(path, isolation_level=None)
        for table in tasks_sql.TABLES:
            conn.execute(f"DROP TABLE {table}")
        conn.execute("DROP INDEX approval_ids_seq")
        conn.execute("PRAGMA user_version = 6")
        conn.close()
        again = SqliteJournal(path)
    else:
        import psycopg

        from cradle_kg.errors import JournalError
        from cradle_kg.storage import open_journal
        from cradle_kg.storage.pg_admin import migrate

        url = journal.url  # type: ignore[attr-defined]
        rt.close()
        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute(f"DROP TABLE {', '.join(tasks_sql.TABLES)}")
            pg.execute("DROP INDEX approval_ids_seq")
            pg.execute("DROP INDEX events_subject_outcome")  # migration 9's
            pg.execute("DROP TABLE journal_keys")  # migration 10's
            pg.execute("DROP FUNCTION cradle_append")  # migration 11's
            pg.execute("DROP INDEX events_subject_decided")  # migration 17's
            pg.execute("DROP TABLE lineage_written")  # migration 18's
            pg.execute("DROP TABLE intent_seconds")  # migration 19's
            pg.execute("DROP TABLE server_times")  # migration 20's
            pg.execute("DELETE FROM schema_migrations WHERE version >= 8")
        with pytest.raises(JournalError, match="schema version `7`"):
            open_journal(url)
        assert migrate(url) == [(8, "inbox-and-repairs"), (9, "outcome-subject-index"),
                                (10, "digest-key"), (11, "append-function"),
                                (12, "approval-exclusions"), (13, "starting-runs"),
                                (14, "unrun-approvals"),
                                (15, "append-run-end-guard"), (16, "append-approval-guard"),
                                (17, "decided-subject-index"), (18, "lineage-written"),
                                (19, "server-seconds"), (20, "server-times")]
        again = open_journal(url)
    with again:
        assert (open_tasks(again, include_resolved=True), again.run_repairs("run:t")) == kept
        assert [t.id for t in open_tasks(again)] == tasks[1:]
        assert again.verify().intact


def _close_account(pid: str, run: str, account: str) -> dict[str, Any]:
    from cradle_kg.demo.scenario import AGENT

    return {"id": pid, "task_id": "t", "run_id": run, "agent_id": AGENT,
            "action": {"action_type": "demo.ledger.close_account",
                       "target": f"ledger:{account}", "arguments": {"account": account}}}


def test_the_inbox_decodes_no_approval_decided_before(tmp_path: Path,
                                                      decoded: Callable[[], int]) -> None:
    """The inbox's approvals are folded from the digests with an approval not decided yet
    (``undecided_approvals``): approvals decided since cost its reads nothing (the old
    read folded every digest ever asked, at every poll of ``/api/inbox``)."""
    from cradle_kg.records import ApprovalStatus

    from .inputcli import fresh_home

    home = fresh_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        for i in range(2):
            assert rt.submit(_close_account(f"w{i}", "run:wait", f"w-{i}")).status \
                == "awaiting_approval"
        want = [i.id for i in inbox(rt, kinds=("approval",))]
        first = _rows(decoded, lambda: inbox(rt, kinds=("approval",)))
        # ``approvals list`` / ``GET /api/approvals``: a page of them, in the order asked
        listed = _rows(decoded, lambda: rt.approvals.page(limit=2))
        for i in range(20):
            out = rt.submit(_close_account(f"d{i}", f"run:d{i}", f"d-{i}"))
            assert out.approval is not None
            rt.decide_approval(out.approval.id, approver_id=APPROVER,
                               token=DEMO_TOKENS[APPROVER],
                               status=(ApprovalStatus.APPROVED, ApprovalStatus.REJECTED)[i % 2],
                               reason="no")
        assert [i.id for i in inbox(rt, kinds=("approval",))] == want and len(want) == 2
        again = _rows(decoded, lambda: inbox(rt, kinds=("approval",)))
        assert again == first, f"{first} rows before 20 decided approvals, {again} after"
        page, total = rt.approvals.page(limit=2)
        assert [st.approval.id for st in page] == want and total == 22
        assert _rows(decoded, lambda: rt.approvals.page(limit=2)) == listed
        later, _ = rt.approvals.page(limit=3, offset=5)
        assert [st.approval.run_id for st in later] == ["run:d3", "run:d4", "run:d5"]
        assert [st.approval.id for st in rt.approvals.page(limit=None)[0]] == [
            st.approval.id for st in sorted(rt.approvals.all(),
                                            key=lambda st: st.approval.requested_at)]
        # ``GET /api/approvals?pending=true`` reads them too: the same approvals as the fold
        # of every approval ever asked
        pending = ApprovalStatus.PENDING
        assert [st.approval.id for st, _ in rt.approvals.pending_page()[0]] == [
            st.approval.id for st in rt.approvals.all() if st.approval.status is pending]
        assert rt.journal.verify().intact
        # an edited row is reported as the other derived tables' are
        _edit(rt, "DELETE FROM undecided_approvals")
        report = rt.journal.verify()
        assert not report.intact and "`undecided_approvals`" in str(report.reason), report


STEP_FLOW = FLOW  # test_32's: one human step


def test_the_inbox_decodes_the_waiting_steps_only(wf_home: Path, tmp_path: Path,  # noqa: F811
                                                  decoded: Callable[[], int]) -> None:
    """The inbox's human steps are read through ``open_steps``: steps answered since, and
    runs that ended, cost its reads nothing (the old read decoded every
    ``human.requested``, ``human.decided`` and workflow end of the journal)."""
    from cradle_kg.workflow import Engine
    from cradle_kg.workflow.definitions import load_file
    from cradle_kg.workflow.runner import decide
    from tests.workflow.conftest import recorded

    flow = tmp_path / "two.yaml"
    flow.write_text(STEP_FLOW)
    with Runtime(wf_home, graph_sync=False) as rt:
        engine = Engine(rt, client=recorded())
        waiting = [engine.start(load_file(flow), {"note": f"w{i}"}).run_id for i in range(2)]
        want = [i.id for i in inbox(rt, kinds=("step",))]
        assert want == [f"{run}/route" for run in waiting]
        first = _rows(decoded, lambda: inbox(rt, kinds=("step",)))
        for i in range(10):
            run = engine.start(load_file(flow), {"note": f"d{i}"}).run_id
            decide(rt, engine, run, "route", by=APPROVER, token=DEMO_TOKENS[APPROVER],
                   answer=("pay", "reject")[i % 2])
        assert [i.id for i in inbox(rt, kinds=("step",))] == want
        again = _rows(decoded, lambda: inbox(rt, kinds=("step",)))
        assert again == first == 2, f"{first} rows before 10 answered steps, {again} after"
        assert [i.id for i in inbox(rt, kinds=("step",), run_id=waiting[1])] == want[1:]
        decide(rt, engine, waiting[0], "route", by=APPROVER, token=DEMO_TOKENS[APPROVER],
               answer="pay")
        assert [i.id for i in inbox(rt, kinds=("step",))] == want[1:]
        assert rt.journal.verify().intact
        _edit(rt, "DELETE FROM open_steps")
        report = rt.journal.verify()
        assert not report.intact and "`open_steps`" in str(report.reason), report


def test_the_budgets_in_force_decode_one_row_per_budget(tmp_path: Path,
                                                        decoded: Callable[[], int]) -> None:
    """A workflow's budget check (every model call) reads the newest ``budget.set`` of each
    budget through ``budget_sets``: budgets set again and again cost it nothing more (the
    old read decoded every ``budget.set`` ever written)."""
    from datetime import UTC, datetime

    from cradle_kg.storage import journal_target, open_journal
    from cradle_kg.workflow import Budget, BudgetBook

    at = datetime(2026, 1, 1, tzinfo=UTC)
    with open_journal(journal_target(tmp_path / "journal.sqlite")) as j:
        book = BudgetBook(j)

        def put(level: str, subject: str, limit: float) -> None:
            j.append([book.set_event(Budget(level=level, subject=subject,  # type: ignore[arg-type]
                                            limit=limit), by="admin", now=at)])

        put("tenant", "acme", 1.0)
        put("workflow", "*", 2.0)
        first = _rows(decoded, book.budgets)
        for n in range(30):
            put("tenant", "acme", 10.0 + n)
        put("invocation", "*", 3.0)
        put("workflow", "*", 4.0)
        assert [(b.key, b.limit) for b in book.budgets()] == [
            ("tenant:acme", 39.0), ("workflow:*", 4.0), ("invocation:*", 3.0)]
        again = _rows(decoded, book.budgets)
        assert (first, again) == (2, 3), (first, again)
        assert j.verify().intact
        if isinstance(j, SqliteJournal):
            conn = sqlite3.connect(j.path)
            conn.execute("UPDATE budget_sets SET last_seq = first_seq")
            conn.commit()
            conn.close()
        else:
            import psycopg

            with psycopg.connect(j.url, autocommit=True) as pg:  # type: ignore[attr-defined]
                pg.execute("UPDATE budget_sets SET last_seq = first_seq")
        report = j.verify()
        assert not report.intact and "`budget_sets`" in str(report.reason), report
