"""The JSON API of the runtime: submit a proposal, list and decide approvals, list runs.

Every route needs ``Authorization: Bearer <token>`` (see :mod:`cradle_kg.server.auth`).
Outcomes are data: a denied proposal is a 200 whose body says ``denied``; an approval
that cannot be given (self-approval, wrong scope, already decided) is a 403 with the
reason. Writes go through one :class:`~cradle_kg.loop.runtime.Runtime`, one at a time,
except a proposal, a workflow start, an approval's decision and a run's walk (an answer to
a human step, a resume), which the runtime governs beside the others (as it does the MCP
gateway's calls and other processes'). Blocking work runs on the caller's own worker
threads (:mod:`.threads`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from ..errors import (
    CradleError,
    InputError,
    UnknownNameError,
)
from ..inbox import approval_list
from ..inputs import MAX_PAGE_INTEGER
from ..lineage.index import HOST_FACT_PREFIX
from ..loop.approvals import shown_now
from ..loop.proposal import host_asserted_fact, principal_stated_fact, read_proposal
from ..loop.runtime import Runtime
from ..records import ApprovalStatus, Outcome
from ..runs import (
    EVENTS_PAGE,
    MAX_EVENTS_PAGE,
    RunSummary,
    list_page,
    page_fields,
    parse_state,
    show_run,
)
from ..workflow import runner
from .api_common import (
    Approver,
    CallerThreads,
    Who,
    json_body,
    outcome_dict,
    read_body,
    reads_run,
    refuse,
    sees,
    shown_summary,
)
from .auth import Caller

T = TypeVar("T")


class ApproveBody(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    once: StrictBool | None = Field(None, description="single use (default: yes, unless a scope "
                                                "or an expiry is given)")
    scope: str | None = None
    until: datetime | None = Field(None, description="expiry, ISO-8601 with a time zone")


class ReasonBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1)


def make_router(runtime: Runtime) -> APIRouter:
    router = APIRouter(prefix="/api", tags=["runtime API"])
    lock = threading.Lock()
    # INVARIANT: what blocks runs on its caller's threads: one identity's slow calls hold
    # its own, not the pool every request shares (tests/security/test_271)
    threads = CallerThreads(runtime)

    def answered(fn: Callable[[], T]) -> T:
        try:
            return fn()
        except CradleError as exc:
            raise refuse(exc) from exc

    def call(fn: Callable[[], T]) -> T:
        with lock:
            return answered(fn)

    # the routes for people share this router's lock; included first, so that their
    # `/runs/{run_id:path}/view` is matched before the run's own `/runs/{run_id:path}`
    from . import api_human

    router.include_router(api_human.make_router(runtime, call, answered=answered,
                                                threads=threads))

    @router.get("/whoami", summary="The identity a token authenticates")
    def whoami(who: Who) -> dict[str, Any]:
        return {"identity": who.identity, "roles": sorted(who.roles)}

    @router.post("/proposals", summary="Submit a proposal through the governed loop",
                 openapi_extra={"requestBody": {"required": True, "content": {
                     "application/json": {"schema": {
                         "type": "object", "description": "a Proposal (`cradle-kg schema "
                         "Proposal`); too many bytes: 413, malformed or out of limits: 422"}}}}})
    async def submit(request: Request, who: Who) -> dict[str, Any]:
        limits = runtime.config.input_limits
        try:
            proposal = read_proposal(await read_body(request, limits), limits,
                                     source="request body")
        except CradleError as exc:
            raise refuse(exc) from None
        if not who.is_agent or proposal.get("agent_id") != who.identity:
            raise HTTPException(403, detail={"error": "forbidden", "message":
                                             f"`{who.identity}` may only submit its own "
                                             "proposals (agent_id must be the caller)"})
        def submit_own() -> Outcome:
            parsed = runtime.parse_proposal(proposal)
            forged = host_asserted_fact(parsed)
            if forged is not None:  # INVARIANT: only the host asserts a host fact
                raise HTTPException(403, detail={"error": "forbidden", "message": (
                    f"`facts[{forged}].source`: `{parsed.facts[forged].source[:80]}` is "
                    f"the host's namespace (`{HOST_FACT_PREFIX}`): an agent's fact names "
                    "a source of its own")})
            spoken = principal_stated_fact(parsed)
            if spoken is not None:  # INVARIANT: an agent never speaks as its principal
                raise HTTPException(403, detail={"error": "forbidden", "message": (
                    f"`facts[{spoken}].source`: `{parsed.facts[spoken].source[:80]}` is the "
                    "principal the proposal acts for (`on_behalf_of`), whose word only the "
                    "host relays: an agent's fact names a source of its own")})
            # the run: checked first, claimed only for a proposal that will be written
            # (tests/security/test_216)
            return runtime.submit(parsed, claim_for=who.identity)

        # not under the API's lock: the runtime governs calls side by side (the MCP
        # gateway's, other processes'); under it, one slow tool held every identity's
        # reads and writes for as long as it took (tests/security/test_271)
        outcome = await threads.run(who, answered, submit_own)
        return outcome_dict(outcome) or {}

    @router.get("/runs", summary="Runs and their state, newest first, one page at a time")
    def runs(who: Who, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
             offset: Annotated[int, Query(ge=0, le=MAX_PAGE_INTEGER)] = 0,
             status: Annotated[str | None, Query(
                 description="only runs in this state (`open`, `waiting_for_person`, "
                             "`escalated`, `completed`, `completed_with_failures`)")] = None
             ) -> list[dict[str, Any]]:
        def page() -> list[RunSummary]:
            state = parse_state(status) if status is not None else None
            return list_page(runtime.journal, limit=limit, offset=offset, newest_first=True,
                             state=state)[0]
        return call(lambda: [shown_summary(runtime, who, r) for r in page()])

    # `:path`: a run id may hold `/` (an agent chooses it), which the server decodes
    # before routing — with `{run_id}`, such a run was a 404 (tests/security/test_97)
    @router.get("/runs/{run_id:path}", summary="One run and one page of its journal events "
                                               "(`more`: the next page is `after_seq="
                                               "next_after_seq`)")
    def run(run_id: str, who: Who,
            limit: Annotated[int, Query(ge=1, le=MAX_EVENTS_PAGE)] = EVENTS_PAGE,
            after_seq: Annotated[int, Query(ge=0, le=MAX_PAGE_INTEGER)] = 0
            ) -> dict[str, Any]:
        def read() -> tuple[dict[str, Any], Any, bool]:
            summary, events = show_run(runtime.journal, run_id, limit=limit,
                                       after_seq=after_seq)
            reader = reads_run(runtime, who, run_id)
            return {**shown_summary(runtime, who, summary, reader=reader),
                    **page_fields(summary, events, limit)}, events, reader
        shown, events, reader = call(read)
        # INVARIANT: a subject (a blob's address, a proposal's id) is the run's readers';
        # another agent's token listed the `evidence` run and cited every upload
        # (tests/security/test_185)
        return {**shown, "events": [
            {"seq": e.seq, "kind": e.kind, "at": e.at.isoformat(), "actor": e.actor,
             "subject": e.subject if reader else None} for e in events]}

    @router.get("/approvals", summary="Approvals in the order they were asked for, one page "
                                      "at a time, optionally only pending ones")
    def approvals(who: Who, pending: Annotated[bool, Query()] = False,
                  limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                  offset: Annotated[int, Query(ge=0, le=MAX_PAGE_INTEGER)] = 0
                  ) -> list[dict[str, Any]]:
        # an agent's page is a page of the approvals its own actions asked for, filtered in
        # the query: before, filtered after paging (a page of another agent's read `[]`), and
        # `pending` read every undecided approval of the journal first (test_100)
        # an approver's pending page leaves out, in the query, what they may not decide
        # (their own agent's approvals), as their inbox does; their history keeps it, each
        # approval saying whether it is theirs to decide (tests/security/test_253)
        mine = None if who.is_approver else who.identity
        decider = who.identity if who.is_approver else None
        page, _ = call(lambda: approval_list(runtime, pending=pending, limit=limit,
                                             offset=offset, requested_by=mine,
                                             decider=decider))
        # as an approval's use reads it: on the server's clock too, once (test_624)
        now = shown_now(runtime.journal, runtime.clock(), (st.approval for st, _ in page))
        return [{**st.record(now), **st.shown(),
                 **({"decidable": why is None, "why_not": why} if decider else {})}
                for st, why in page]

    @router.get("/approvals/{approval_id}",
                summary="One approval and the exact action it is bound to (a caller's first "
                        "view is journaled, and their first after the approval moved on)")
    def approval(approval_id: str, who: Who) -> dict[str, Any]:
        def view() -> dict[str, Any]:
            if not who.is_approver:  # an agent sees the approvals its own actions asked for
                asked = runtime.approvals.get(approval_id).approval
                if not sees(who, asked.requested_by):
                    raise UnknownNameError(f"no approval `{approval_id}`")
            runtime.view_approval(approval_id, viewer=who.identity)
            state = runtime.approvals.get(approval_id)
            a = state.approval
            proposal, shown = runtime.approvals.shown_request(a)
            # the tool's version it covers, and the one now: said before a person decides
            tool = runtime.approval_tool(a, proposal.action.action_type)
            # every distinct blob the proposal cites (its inbox item names a few:
            # tests/security/test_413)
            now = shown_now(runtime.journal, runtime.clock(), [a])  # (test_624)
            return {"approval": state.record(now), "action": shown,
                    "proposed_by": proposal.agent_id, "tool": tool.to_dict(),
                    "evidence": list(proposal.evidence_items), **state.shown()}
        return call(view)

    def decide(approval_id: str, who: Caller, status: ApprovalStatus,
               **kw: Any) -> dict[str, Any]:
        def go() -> tuple[Any, Outcome | None, dict[str, Any] | None, dict[str, Any]]:
            approval, outcome = runtime.decide_approval(
                approval_id, approver_id=who.identity, token=who.token, status=status, **kw)
            # a workflow's tool step waited for it: the workflow walks on by itself
            walked = runner.after_approval(runtime, approval.run_id,
                                           base_url=os.environ.get("CRADLE_MODEL_BASE_URL"),
                                           api_key=os.environ.get("CRADLE_MODEL_API_KEY"))
            # a stale approval can be decided; the answer says it covers nothing now
            tool = runtime.requested_tool(approval)
            return approval, outcome, walked, tool.to_dict()
        # not under the API's lock: an approved action runs its tool, and a slow one held
        # every identity's reads and writes until it answered (tests/security/test_272);
        # the journal's decide-once guard holds two decisions apart, as across processes
        updated, outcome, walked, tool = answered(go)
        return {"approval": updated.model_dump(mode="json"), "outcome": outcome_dict(outcome),
                "tool": tool, **({"workflow": walked} if walked is not None else {})}

    @router.post("/approvals/{approval_id}/approve",
                 summary="Approve the exact action; the waiting run continues by itself",
                 openapi_extra={"requestBody": {"content": {"application/json": {
                     "schema": ApproveBody.model_json_schema()}}}})
    async def approve(approval_id: str, request: Request, who: Approver) -> dict[str, Any]:
        b = await json_body(request, runtime.config.input_limits, ApproveBody)
        b = b or ApproveBody()
        once = b.once if b.once is not None else (b.scope is None and b.until is None)
        return await threads.run(who, lambda: decide(
            approval_id, who, ApprovalStatus.APPROVED, once=once, scope=b.scope, until=b.until))

    async def reason_of(request: Request) -> str:
        body = await json_body(request, runtime.config.input_limits, ReasonBody)
        if body is None:
            raise refuse(InputError("`reason`: field required"))
        return body.reason

    @router.post("/approvals/{approval_id}/reject", summary="Reject the action, with a reason",
                 openapi_extra={"requestBody": {"required": True, "content": {
                     "application/json": {"schema": ReasonBody.model_json_schema()}}}})
    async def reject(approval_id: str, request: Request, who: Approver) -> dict[str, Any]:
        reason = await reason_of(request)
        return await threads.run(who, lambda: decide(
            approval_id, who, ApprovalStatus.REJECTED, reason=reason))

    @router.post("/approvals/{approval_id}/request-changes",
                 summary="Send the proposal back with the changes wanted",
                 openapi_extra={"requestBody": {"required": True, "content": {
                     "application/json": {"schema": ReasonBody.model_json_schema()}}}})
    async def request_changes(approval_id: str, request: Request,
                              who: Approver) -> dict[str, Any]:
        reason = await reason_of(request)
        return await threads.run(who, lambda: decide(
            approval_id, who, ApprovalStatus.CHANGES_REQUESTED, reason=reason))

    @router.post("/approvals/{approval_id}/revoke",
                 summary="Take an approved approval back: it then authorizes nothing "
                         "more (a reusable one after its use too; 409 `already_used` once "
                         "an approve-once's action ran)",
                 openapi_extra={"requestBody": {"required": True, "content": {
                     "application/json": {"schema": ReasonBody.model_json_schema()}}}})
    async def revoke(approval_id: str, request: Request, who: Approver) -> dict[str, Any]:
        reason = await reason_of(request)

        def go() -> dict[str, Any]:
            runtime.revoke_approval(approval_id, approver_id=who.identity, token=who.token,
                                    reason=reason)
            state = runtime.approvals.get(approval_id)
            return {"approval": state.approval.model_dump(mode="json"), **state.shown()}
        # not under the API's lock: it reads the approval's run, and the journal's guards
        # decide a race with its use (one of the two wins), as across processes
        return await threads.run(who, lambda: answered(go))

    return router
