"""A person ends a workflow run: ``cradle-kg workflow cancel`` and the JSON API's
``POST /api/workflows/runs/{run}/cancel``.

One append, under the journal's writer's lock: each approval the run asked for that no
person decided yet is rejected by the canceller (the reason names the cancel; its
proposal's outcome becomes ``denied``), each rejection claiming its approval's decision
key (decided once: a person's decision landing first makes the cancel read again), then
the run's end — a ``workflow.failed`` they wrote, ``code: cancelled`` (:mod:`.ending`) —
written only while the run has not ended (``if_run_open``). A request the run's agent
wrote between the read and the append is rejected by a second append: none lands in the
run after its end. Before, the rejections were written ``if_last`` over each approval's
digest in any run, three reads at most: an agent asking for the same action in other runs
kept a person from cancelling (``tests/security/test_335``). Afterwards the
run counts in no ``waiting_per_agent`` (its open steps, its start on the way to a person,
its approvals: each derived table reads the end or the decision as it always did), its
steps are not answered and it is not walked on (:class:`~cradle_kg.errors.RunCancelledError`).

Why the pending approvals are rejected rather than left: an approval left undecided would
still count against the agent and sit in the inbox, and approved later it would let the
action run for a run that was ended; rejected, it is decided for good — the fail-closed
choice. The canceller must be one who may decide each of them (their token, not excluded,
within its scope): otherwise the cancel is refused and nothing is written.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import ApprovalError, InputError, JournalError
from ..inputs import check_human_input
from ..loop.approval_flow import decided_events
from ..records import ApprovalStatus
from ..runs import run_end
from ..storage import NewEvent, RunEnded
from .ending import cancel_payload, ended_error
from .engine import Engine, started_event
from .runner import check_step_scope
from .steps import HumanStep

if TYPE_CHECKING:
    from ..loop.runtime import Runtime

#: the longest reason a person may give
MAX_REASON = 10_000
#: reads of the run before the cancel gives up (its approvals kept moving)
_CANCEL_ATTEMPTS = 3


def cancel(rt: Runtime, engine: Engine, run_id: str, *, by: str, token: str,
           reason: str) -> dict[str, Any]:
    """End the workflow run ``run_id`` as ``by`` (an approver, with their token) for
    ``reason``; what was released. A run that ended (completed, failed, cancelled) is a
    :class:`~cradle_kg.errors.RunEndedError` and nothing is written."""
    rt.approvals.authenticate(by, token)
    check_human_input(rt.config.input_limits, ids={"run_id": run_id, "as": by},
                      texts={"reason": reason})
    if not reason.strip():
        raise InputError("a cancel needs a reason", hint="say why the run is ended")
    if len(reason) > MAX_REASON:
        raise InputError(f"`reason`: more than {MAX_REASON} characters")
    workflow = str(started_event(rt.journal, run_id).payload.get("workflow"))
    released: dict[str, list[str]] = {}
    why = f"workflow run `{run_id}` cancelled: {reason}"

    def events() -> list[NewEvent]:
        end = run_end(rt.journal, run_id)
        if end is not None:
            raise ended_error(run_id, end)
        now = rt.clock()
        out, approvals = _rejections(rt, run_id, by=by, token=token, why=why, now=now)
        steps = sorted({str(e.payload["step"]) for e in
                        rt.journal.open_step_requests(run_id=run_id)[0]})
        _may_end(rt, engine, run_id, by=by, steps=steps, waits=len(approvals) + len(steps))
        out.append(NewEvent(run_id=run_id, kind="workflow.failed",
                            subject=f"workflow:{workflow}", actor=by, at=now,
                            payload=cancel_payload(step=steps[0] if steps else None, by=by,
                                                   reason=reason),
                            if_run_open=True))
        released.update(approvals=approvals, steps=steps)
        return out

    try:
        written = rt.context.append_unmoved(
            events, attempts=_CANCEL_ATTEMPTS, gave_up=JournalError(
                f"run `{run_id}`: its approvals kept being decided while it was cancelled; "
                "cancel again"))
    except RunEnded:  # it ended after the read (a walker's end, another cancel)
        end = run_end(rt.journal, run_id)
        if end is None:
            raise
        raise ended_error(run_id, end) from None
    # INVARIANT: what the run's agent asked for between the read and the end is rejected
    # too — one more read suffices: no request lands in the run after its end (if_run_open)
    late: list[str] = []

    def leftovers() -> list[NewEvent]:
        out, ids = _rejections(rt, run_id, by=by, token=token, why=why, now=rt.clock(),
                               skip_refused=True)
        late[:] = ids
        return out

    rt.context.append_unmoved(leftovers, attempts=_CANCEL_ATTEMPTS, gave_up=JournalError(
        f"run `{run_id}` is cancelled; its approvals kept being decided meanwhile: reject "
        "the ones still waiting"))
    released["approvals"] = released.get("approvals", []) + late
    return {"run_id": run_id, "workflow": workflow, "status": "cancelled", "by": by,
            "reason": reason, "at": written[-1].at.isoformat(), "seq": written[-1].seq,
            "rejected_approvals": released.get("approvals", []),
            "closed_steps": released.get("steps", [])}


def _rejections(rt: Runtime, run_id: str, *, by: str, token: str, why: str,
                now: datetime, skip_refused: bool = False) -> tuple[list[NewEvent], list[str]]:
    """The rejection by ``by`` of each approval of the run no person decided yet (its
    ``approval.decided``, claiming the approval's decision key, and its proposal's
    ``denied``), and their ids. ``skip_refused``: one ``by`` may not decide is left as it
    is (after the run's end, nothing runs under it), instead of refusing the cancel."""
    out: list[NewEvent] = []
    ids: list[str] = []
    pending, _ = rt.approvals.pending_page(run_id=run_id)
    for listed, _request in pending:
        state, seen = rt.approvals.read(listed.approval.id)
        if state.approval.status is not ApprovalStatus.PENDING:
            continue
        try:
            decided = rt.approvals.decision_event(
                state, approver_id=by, token=token, status=ApprovalStatus.REJECTED, now=now,
                reason=why)
        except ApprovalError:
            if skip_refused:
                continue
            raise
        out += decided_events(rt.approvals, state, seen, decided,
                              status=ApprovalStatus.REJECTED, approver_id=by, reason=why,
                              now=now)
        ids.append(state.approval.id)
    return out, ids


def _may_end(rt: Runtime, engine: Engine, run_id: str, *, by: str, steps: list[str],
             waits: int) -> None:
    """Refuse a canceller who may not answer each of ``steps`` (the human steps the run
    waits on), as an answer to it would be refused (its scope, ``*`` for none); a run that
    waits on nothing (cut before its review, between steps) is for an approver holding
    ``*``. Before, any approver ended a run whose review they may not answer
    (``tests/security/test_299``)."""
    approver = rt.approvals.approver(by)
    if approver is None:  # authenticated as one: never reached, refused all the same
        raise ApprovalError(f"`{by}` is not an approver of this home")
    if "*" in approver.scopes:
        return  # answers every step: the run's workflow is not read for them
    if waits == 0:
        raise ApprovalError(
            f"`{by}` may not cancel workflow run `{run_id}`: it waits on no step or "
            "approval of their scopes (" + ", ".join(f"`{x}`" for x in approver.scopes)
            + "); an approver holding `*` may")
    if not steps:
        return
    workflow = engine.workflow(run_id)
    for step_id in steps:
        step = workflow.step(step_id)
        if isinstance(step, HumanStep):
            check_step_scope(rt, step, by=by, run_id=run_id)


__all__ = ["MAX_REASON", "cancel"]
