"""The JSON API of the runtime: submit a proposal, list and decide approvals, list runs.

Every route needs ``Authorization: Bearer <token>`` (see :mod:`cradle_kg.server.auth`).
Outcomes are data: a denied proposal is a 200 whose body says ``denied``; an approval
that cannot be given (self-approval, wrong scope, already decided) is a 403 with the
reason. Writes go through one :class:`~cradle_kg.runtime.Runtime`, one at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ApprovalError, CradleError, ProposalError, UnknownNameError
from ..records import ApprovalStatus, Outcome
from ..runs import list_runs, show_run
from ..runtime import Runtime
from .auth import Caller, authenticate

T = TypeVar("T")
_bearer = HTTPBearer(auto_error=False, description="a per-identity API token")


class ApproveBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    once: bool | None = Field(None, description="single use (default: yes, unless a scope "
                                                "or an expiry is given)")
    scope: str | None = None
    until: datetime | None = Field(None, description="expiry, ISO-8601 with a time zone")


class ReasonBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1)


def _status(exc: CradleError) -> int:
    if isinstance(exc, UnknownNameError):
        return 404
    if isinstance(exc, ApprovalError):
        return 403
    if isinstance(exc, ProposalError):
        return 422
    return 400


def _outcome(outcome: Outcome | None) -> dict[str, Any] | None:
    return outcome.model_dump(mode="json") if outcome is not None else None


def _caller(request: Request,
            creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Caller:
    runtime: Runtime = request.app.state.runtime
    who = authenticate(runtime.home, runtime.config, creds.credentials if creds else "")
    if who is None:
        raise HTTPException(401, detail={"error": "unauthenticated",
                                         "message": "a valid bearer token is required"},
                            headers={"WWW-Authenticate": "Bearer"})
    return who


Who = Annotated[Caller, Depends(_caller)]


def _approver(who: Who) -> Caller:
    if not who.is_approver:
        raise HTTPException(403, detail={"error": "forbidden", "message":
                                         f"`{who.identity}` is not a configured approver"})
    return who


Approver = Annotated[Caller, Depends(_approver)]


def make_router(runtime: Runtime) -> APIRouter:
    router = APIRouter(prefix="/api", tags=["runtime API"])
    lock = threading.Lock()

    def call(fn: Callable[[], T]) -> T:
        with lock:
            try:
                return fn()
            except CradleError as exc:
                raise HTTPException(_status(exc), detail=exc.to_dict()) from exc

    @router.get("/whoami", summary="The identity a token authenticates")
    def whoami(who: Who) -> dict[str, Any]:
        return {"identity": who.identity, "roles": sorted(who.roles)}

    @router.post("/proposals", summary="Submit a proposal through the governed loop")
    def submit(proposal: dict[str, Any], who: Who) -> dict[str, Any]:
        if not who.is_agent or proposal.get("agent_id") != who.identity:
            raise HTTPException(403, detail={"error": "forbidden", "message":
                                             f"`{who.identity}` may only submit its own "
                                             "proposals (agent_id must be the caller)"})
        return _outcome(call(lambda: runtime.submit(proposal))) or {}

    @router.get("/runs", summary="Runs and their status")
    def runs(who: Who) -> list[dict[str, Any]]:
        return [r.to_dict() for r in call(lambda: list_runs(runtime.journal))]

    @router.get("/runs/{run_id}", summary="One run and its journal events")
    def run(run_id: str, who: Who) -> dict[str, Any]:
        summary, events = call(lambda: show_run(runtime.journal, run_id))
        return {**summary.to_dict(), "events": [
            {"seq": e.seq, "kind": e.kind, "at": e.at.isoformat(), "actor": e.actor,
             "subject": e.subject} for e in events]}

    @router.get("/approvals", summary="Approvals, optionally only pending ones")
    def approvals(who: Who, pending: Annotated[bool, Query()] = False) -> list[dict[str, Any]]:
        states = call(runtime.approvals.all)
        return [s.approval.model_dump(mode="json") for s in states
                if not pending or s.approval.status is ApprovalStatus.PENDING]

    @router.get("/approvals/{approval_id}",
                summary="One approval and the exact action it is bound to (view is journaled)")
    def approval(approval_id: str, who: Who) -> dict[str, Any]:
        def view() -> dict[str, Any]:
            a = runtime.view_approval(approval_id, viewer=who.identity)
            proposal = runtime._requested_proposal(a)
            return {"approval": a.model_dump(mode="json"),
                    "action": proposal.action.model_dump(mode="json"),
                    "proposed_by": proposal.agent_id}
        return call(view)

    def decide(approval_id: str, who: Caller, status: ApprovalStatus,
               **kw: Any) -> dict[str, Any]:
        def go() -> tuple[Any, Outcome | None]:
            return runtime.decide_approval(approval_id, approver_id=who.identity,
                                           token=who.token, status=status, **kw)
        updated, outcome = call(go)
        return {"approval": updated.model_dump(mode="json"), "outcome": _outcome(outcome)}

    @router.post("/approvals/{approval_id}/approve",
                 summary="Approve the exact action; the waiting run continues by itself")
    def approve(approval_id: str, who: Approver,
                body: ApproveBody | None = None) -> dict[str, Any]:
        b = body or ApproveBody()
        once = b.once if b.once is not None else (b.scope is None and b.until is None)
        return decide(approval_id, who, ApprovalStatus.APPROVED, once=once, scope=b.scope,
                      until=b.until)

    @router.post("/approvals/{approval_id}/reject", summary="Reject the action, with a reason")
    def reject(approval_id: str, who: Approver, body: ReasonBody) -> dict[str, Any]:
        return decide(approval_id, who, ApprovalStatus.REJECTED, reason=body.reason)

    @router.post("/approvals/{approval_id}/request-changes",
                 summary="Send the proposal back with the changes wanted")
    def request_changes(approval_id: str, who: Approver, body: ReasonBody) -> dict[str, Any]:
        return decide(approval_id, who, ApprovalStatus.CHANGES_REQUESTED, reason=body.reason)

    return router
