"""The JSON API for people: workflows, the inbox, human steps and tasks, evidence, runs.

The same service layer as the command line (:mod:`cradle_kg.workflow.runner`,
:mod:`cradle_kg.inbox`, :mod:`cradle_kg.runs`), so both say the same things. Every route
needs a bearer token; answering a human step or closing a task needs an approver's (403
otherwise); starting a workflow needs the workflow's own agent or an approver. An unknown
run, step, workflow or blob is a 404, a malformed body 422, an upload past its cap 413, an
upload past the identity's hourly quota 429 (``Retry-After``: when the window frees up), a
workflow file sent to be checked while the identity's last is, or two others are, 429.

A model step calls the OpenAI-compatible server of ``$CRADLE_MODEL_BASE_URL`` (read when
the server starts); without one it fails closed (``model_unavailable``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Final, Protocol, TypeVar

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from ..errors import (
    CradleError,
    InputError,
    InputTooLargeError,
    JournalError,
    QuotaExceededError,
    UnknownNameError,
    WorkflowFileError,
)
from ..evidence import (
    HOST_COLLECTOR_PREFIX,
    MAX_EVIDENCE_BYTES,
    evidence_record,
    recorded_size,
    upload,
)
from ..inbox import INBOX_PAGE, MAX_INBOX_PAGE, InboxItem, inbox, inbox_size, parse_kinds
from ..inputs import MAX_PAGE_INTEGER
from ..loop.approval_flow import check_waiting, waiting_error
from ..loop.proposal import check_run_namespace
from ..loop.runtime import Runtime
from ..runs import (
    EVENTS_PAGE,
    MAX_EVENTS_PAGE,
    page_fields,
    show_run,
    shown_events,
    state_counts,
)
from ..storage import WaitingReached
from ..throttling import record_reached
from ..workflow import runner
from ..workflow.cancel import MAX_REASON, cancel
from ..workflow.definitions import MAX_FILE_BYTES, load_file, parse_definition
from ..workflow.engine import Engine
from .api_common import (
    Approver,
    CallerThreads,
    Who,
    evidence_reader,
    json_body,
    read_body,
    reads_run,
    refuse,
    sees,
    shown_summary,
)
from .auth import Caller
from .lanes import lanes

T = TypeVar("T")


class Call(Protocol):
    """Runs one function (under the API's lock, or not), its typed errors turned into
    answers."""

    def __call__(self, fn: Callable[[], T]) -> T: ...


class StartBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input: dict[str, Any]
    run_id: str | None = Field(None, description="the run's id (default: derived); not "
                               "beginning with `run:` (the runs proposals, sessions and plans "
                               "derive)")


class AnswerBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str = Field(min_length=1, max_length=10_000)
    note: str | None = Field(None, max_length=10_000)


class NoteBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    note: str = Field(min_length=1, max_length=10_000)


class CancelBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=MAX_REASON)


def _visible(who: Caller, items: list[InboxItem]) -> list[dict[str, Any]]:
    """The inbox as ``who`` may see it: an approver all of it; an agent only the approvals
    its own actions asked for (another agent's action and arguments, a workflow's context
    in a human step, are not its business, as in ``/api/approvals``)."""
    return [i.to_dict() for i in items
            if who.is_approver or (i.kind == "approval" and sees(who, i.proposed_by or ""))]


def _asker(who: Caller) -> str | None:
    """Whose approvals an inbox read for ``who`` is filtered to, in the query (an agent's
    own: ``tests/security/test_100``); ``None`` for an approver (all of it)."""
    return None if who.is_approver else who.identity


def _decider(who: Caller) -> str | None:
    """The approver an inbox read is for: one limited to scopes is shown and counted only
    what they may decide (``tests/security/test_198``); ``None`` for an agent."""
    return who.identity if who.is_approver else None


def _limits(runtime: Runtime, max_bytes: int) -> Any:
    return runtime.config.input_limits.model_copy(update={"max_bytes": max_bytes})


#: workflow files one identity may have checked at once (``POST /api/workflows/validate``)
VALIDATING_PER_IDENTITY: Final = 1
#: workflow files the server parses at once, all identities together
PARSING_AT_ONCE: Final = 2


class Turns:
    """Who may have a workflow file checked now. A full body costs about 0.9 s of CPU to
    parse, holding the GIL of the server's process (the JSON API, the page, every
    decision): one identity has one in flight (from before its body is read), and the
    server parses :data:`PARSING_AT_ONCE` at once; past either, a 429 before anything is
    parsed. Before, one agent's token sent as many side by side as the thread pool ran
    (``tests/security/test_171``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}
        self._parsing = 0

    @staticmethod
    def _busy(what: str) -> HTTPException:
        return refuse(QuotaExceededError(what, retry_after=1,
                                         hint="send it again once the other is answered"))

    @contextmanager
    def identity(self, who: str) -> Iterator[None]:
        with self._lock:
            if self._in_flight.get(who, 0) >= VALIDATING_PER_IDENTITY:
                raise self._busy(f"`{who}` has a workflow file being checked already")
            self._in_flight[who] = self._in_flight.get(who, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._in_flight.pop(who) - 1
                if left:
                    self._in_flight[who] = left

    @contextmanager
    def parsing(self) -> Iterator[None]:
        with self._lock:
            if self._parsing >= PARSING_AT_ONCE:
                raise self._busy(f"{PARSING_AT_ONCE} workflow files are being checked "
                                 "already")
            self._parsing += 1
        try:
            yield
        finally:
            with self._lock:
                self._parsing -= 1


def make_router(runtime: Runtime, call: Call, *, answered: Call,
                threads: CallerThreads) -> APIRouter:
    """The routes; ``call`` runs under the API's lock, ``answered`` without it; ``threads``
    holds each identity's worker threads (what blocks runs on its caller's own:
    ``tests/security/test_271``)."""
    router = APIRouter(tags=["people: workflows, inbox, evidence"])
    turns = Turns()
    home = runtime.home.root
    base_url = os.environ.get("CRADLE_MODEL_BASE_URL") or None
    api_key = os.environ.get("CRADLE_MODEL_API_KEY") or None

    def engine() -> Engine:
        return runner.open_engine(runtime, base_url=base_url, api_key=api_key)

    def reads_workflow(who: Caller, run_id: str) -> bool:
        """A workflow run's input, outputs and questions are its agent's and the approvers'
        (who may start it may read it); another agent's token is told no such run. Read
        from the run's ``workflow.started`` alone (one row), not a fold of the run its
        agent grows at will (``tests/security/test_91``)."""
        return who.is_approver or engine().agent_of(run_id) == who.identity

    async def body_of(request: Request, model: type[Any]) -> Any:
        body = await json_body(request, runtime.config.input_limits, model)
        if body is None:
            raise refuse(InputError("a JSON body is required"))
        return body

    # --- runs ------------------------------------------------------------------------

    @router.get("/overview", summary="How many runs are in each state, and the inbox's size")
    def overview(who: Who) -> dict[str, Any]:
        # counted in the derived tables: the page polls this every 3 s (before, every
        # pending item was read and rendered to be counted)
        return call(lambda: {"runs": state_counts(runtime.journal),
                             "inbox": inbox_size(runtime, requested_by=_asker(who),
                                                 decider=_decider(who))})

    # `:path`: a run id may hold `/`, decoded before routing (tests/security/test_97)
    @router.get("/runs/{run_id:path}/view",
                summary="A run for the page: its state, why, one lane per proposal, and its "
                        "workflow's steps")
    def run_view(run_id: str, who: Who,
                 limit: Annotated[int, Query(ge=1, le=MAX_EVENTS_PAGE)] = EVENTS_PAGE,
                 after_seq: Annotated[int, Query(ge=0, le=MAX_PAGE_INTEGER)] = 0
                 ) -> dict[str, Any]:
        def view() -> dict[str, Any]:
            # the lanes of one page of the run's events (``more``: the run has others)
            summary, events = show_run(runtime.journal, run_id, limit=limit,
                                       after_seq=after_seq)
            # the run's values (its why, its lanes' targets and reasons) are its agent's and
            # the approvers' (tests/security/test_173)
            mine = reads_run(runtime, who, run_id)
            out: dict[str, Any] = {**shown_summary(runtime, who, summary, reader=mine),
                                   **page_fields(summary, events, limit),
                                   "lanes": lanes(shown_events(runtime.journal, run_id,
                                                               events)) if mine else [],
                                   "inbox": _visible(who, inbox(
                                       runtime, run_id=run_id, requested_by=_asker(who),
                                       limit=INBOX_PAGE, decider=_decider(who))),
                                   "inbox_total": inbox_size(runtime, run_id=run_id,
                                                             requested_by=_asker(who),
                                                             decider=_decider(who))}
            if summary.workflow is not None and reads_workflow(who, run_id):
                try:
                    out["workflow_status"] = status = runner.status(engine(), run_id)
                except CradleError as exc:  # the run is shown without its steps
                    out["workflow_error"] = exc.to_dict()
                else:  # its file changed or went: the steps as the run recorded them
                    if "workflow_error" in status:  # (tests/security/test_169)
                        out["workflow_error"] = status["workflow_error"]
            return out
        return call(view)

    # --- workflows ---------------------------------------------------------------------

    @router.get("/workflows", summary="The workflow files of the home, each checked")
    def workflows(who: Who) -> list[dict[str, Any]]:
        return call(lambda: runner.list_definitions(home))

    @router.post("/workflows/validate", summary="Check a workflow file sent as the body "
                 "(YAML); one at a time an identity, a few at once in all (429 past either)")
    async def validate(request: Request, who: Who) -> dict[str, Any]:
        with turns.identity(who.identity):  # held from before its body is read
            data = await read_body(request, _limits(runtime, MAX_FILE_BYTES))
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise refuse(InputError("the body is not UTF-8")) from None

            def check() -> dict[str, Any]:
                with turns.parsing():  # given back when the parse ends, on its own thread
                    try:
                        wf = parse_definition(text, name="request body",
                                              definition="file:<request>")
                    except WorkflowFileError as exc:
                        return {"valid": False, "problems": list(exc.problems)}
                    return {"valid": True, "workflow": runner.describe(wf)}
            return await threads.run(who, check)

    @router.post("/workflows/{name}/runs", summary="Start a run of a workflow of the home")
    async def start(name: str, request: Request, who: Who) -> dict[str, Any]:
        body: StartBody = await body_of(request, StartBody)

        def go() -> dict[str, Any]:
            path = runner.find_definition(home, name, paths=False)  # the home's files only
            wf = load_file(path)
            if not who.is_approver and who.identity != wf.agent:
                raise HTTPException(403, detail={"error": "forbidden", "message": (
                    f"`{who.identity}` may not start `{wf.id}` (its agent or an approver may)")})
            waiting = None
            if not who.is_approver:  # the agent's own token: within what may wait for it
                waiting = check_waiting(runtime.config.input_limits, runtime.journal, wf.agent)
            try:
                return runner.start(engine(), path, body.input, run_id=body.run_id,
                                    by=who.identity, waiting=waiting)
            except WaitingReached as reached:  # counted again under the journal's lock
                raise waiting_error(reached.cap.agent, reached.waiting,
                                    reached.cap.limit) from None

        def recorded() -> dict[str, Any]:
            """The start, its waiting quota's refusal recorded (``test_217``)."""
            try:
                return go()
            except QuotaExceededError as refused:
                record_reached(runtime.journal, runtime.context.append, refused,
                               now=runtime.clock())
                raise
        # not under the API's lock: a run's tool and model steps take their time, and one
        # agent's starts held every identity's reads and writes (tests/security/test_271);
        # the journal guards a start as it does another process's (test_44, test_249)
        return await threads.run(who, answered, recorded)

    @router.get("/workflows/runs/{run_id}", summary="Where a workflow run stands (read only; "
                "its input and outputs: the workflow's agent or an approver)")
    def workflow_status(run_id: str, who: Who) -> dict[str, Any]:
        def status() -> dict[str, Any]:
            if not reads_workflow(who, run_id):
                raise UnknownNameError(f"unknown workflow run `{run_id}`")
            return runner.status(engine(), run_id)
        return call(status)

    @router.post("/workflows/runs/{run_id}/resume", summary="Continue a workflow run")
    async def resume(run_id: str, who: Approver) -> dict[str, Any]:
        # not under the API's lock: the walk an answer makes (tests/security/test_274)
        return await threads.run(who, answered,
                                 lambda: runner.resume(engine(), run_id))

    @router.post("/workflows/runs/{run_id}/cancel",
                 summary="End a workflow run (an approver): its waits are released, it is "
                         "never answered or resumed again")
    async def cancel_run(run_id: str, request: Request, who: Approver) -> dict[str, Any]:
        body: CancelBody = await body_of(request, CancelBody)
        # one append (the journal's guards decide a race with a walker or an answer)
        return await threads.run(who, call, lambda: cancel(
            runtime, engine(), run_id, by=who.identity, token=who.token, reason=body.reason))

    # --- the inbox and its answers ------------------------------------------------------

    @router.get("/inbox", summary="What waits for a person: approvals, tasks, human steps")
    def get_inbox(who: Who, kind: list[str] | None = Query(None), run: str | None = None,
                  limit: Annotated[int, Query(ge=1, le=MAX_INBOX_PAGE)] = INBOX_PAGE,
                  offset: Annotated[int, Query(ge=0, le=MAX_PAGE_INTEGER)] = 0
                  ) -> list[dict[str, Any]]:
        # one page, oldest first; `/api/overview`'s `inbox` counts them all
        return call(lambda: _visible(who, inbox(runtime, kinds=parse_kinds(kind or ()),
                                                run_id=run, requested_by=_asker(who),
                                                limit=limit, offset=offset,
                                                decider=_decider(who))))

    @router.post("/steps/{run_id}/{step}/decide",
                 summary="Answer a waiting human step (an approver); the run continues")
    async def decide(run_id: str, step: str, request: Request, who: Approver) -> dict[str, Any]:
        body: AnswerBody = await body_of(request, AnswerBody)
        # not under the API's lock: the run walks on into its next steps, and a slow one held
        # every identity until it answered (tests/security/test_273); the journal writes
        # the answer only over the events it was decided on (test_32)
        return await threads.run(who, answered, lambda: runner.decide(
            runtime, engine(), run_id, step, by=who.identity, token=who.token,
            answer=body.answer, note=body.note))

    @router.post("/tasks/{task_id}/resolve", summary="Close a human task, saying what was done")
    async def resolve(task_id: str, request: Request, who: Approver) -> dict[str, Any]:
        body: NoteBody = await body_of(request, NoteBody)
        task = await threads.run(who, call, lambda: runtime.resolve_task(
            task_id, by=who.identity, token=who.token, note=body.note))
        return dict(task.to_dict())

    # --- evidence ------------------------------------------------------------------------

    @router.post("/evidence", summary=f"Upload evidence (the raw body, at most "
                                      f"{MAX_EVIDENCE_BYTES} bytes; within the identity's "
                                      "hourly quota, 429 past it); answers its address")
    async def add_evidence(request: Request, who: Who,
                           kind: Annotated[str, Query(min_length=1, max_length=200)] = "document",
                           source: Annotated[str | None, Query(max_length=1000)] = None,
                           run: Annotated[str | None, Query(min_length=1, max_length=1000)]
                           = None,
                           action: Annotated[str | None, Query(min_length=1, max_length=1000)]
                           = None) -> dict[str, Any]:
        try:
            data = await read_body(request, _limits(runtime, MAX_EVIDENCE_BYTES))
        except HTTPException:
            raise refuse(InputTooLargeError(
                f"`evidence`: more than the limit of {MAX_EVIDENCE_BYTES} bytes")) from None
        if not data:
            raise refuse(InputError("`evidence`: the body is empty"))

        # the host application's token uploads as the host, not as its agent: an agent's
        # upload is no evidence, the host's is (tests/security/test_180)
        by = f"{HOST_COLLECTOR_PREFIX}{who.identity}" if who.is_host else who.identity

        def put() -> dict[str, Any]:  # under the API's lock: the quota's count holds
            # `run`: the run it is evidence for, alone (tests/security/test_199); `action`:
            # the action (the key its agent pins on it), alone (test_247). INVARIANT: an
            # agent's or its host's token binds no upload to a run of another identity's
            # namespace, declared or not (a host's upload counts as evidence there:
            # test_259); a person gives documents for any run
            if run is not None and not who.is_approver:
                check_run_namespace(run, who.identity)
            ref = upload(runtime.context, runtime.evidence, data, kind=kind, source=source,
                         by=by, for_run=run, for_action=action)
            return {"ref": ref, "bytes": len(data), "kind": kind, "source": source, "by": by,
                    "run": run, "action": action}
        return await threads.run(who, call, put)

    @router.get("/evidence/{ref}", summary="Who added a blob and when (an agent: its own uploads "
                                          "and its runs'); re-hashed (409 if edited)")
    def show_evidence(ref: str, who: Who) -> dict[str, Any]:
        def show() -> dict[str, Any]:
            # INVARIANT: an agent is told of its own uploads and its runs' alone; a blob
            # with none of those reads as one that is not there, before its bytes are read
            # (404, not 403: that would say someone uploaded it, tests/security/test_338)
            reader = evidence_reader(runtime, who)
            record = evidence_record(runtime.journal, ref, reader=reader)
            if reader is not None and not record["added"]:
                raise UnknownNameError(runtime.evidence.missing(ref).message)
            try:  # re-hashed in chunks, never read whole (tests/security/test_360)
                size = runtime.evidence.verify(ref, size=recorded_size(record))
            except JournalError as exc:
                raise HTTPException(409, detail=exc.to_dict()) from None
            except InputError as exc:
                raise UnknownNameError(exc.message) from None
            return {**record, "bytes": size, "intact": True}
        return call(show)

    return router


__all__ = ["make_router"]
