"""The workflow engine: runs steps, journals each one, resumes from the journal.

A run's state is a projection of its events (``workflow.started``, ``step.*``,
``model.reserved``, ``model.called``, ``human.*``, ``budget.*``, ``task.opened``, the
runtime's own events for tool steps, ``workflow.completed|failed``).
:meth:`Engine.advance` folds them and walks the steps in order: a step already completed
**with the same input hash** is not executed again, a waiting human step holds no worker
(the call returns), and a finished run is only reported.

Determinism: the engine reads time only through ``runtime.clock`` and derives every id
from the run, the step and the input hash, so a strict replay that feeds the recorded
times and model responses reproduces the same events, hash for hash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..canonical import canonical_json, content_hash, iso
from ..errors import (
    BudgetExceededError,
    CradleError,
    InputError,
    RunMovedError,
    TaskOwnershipError,
    TenantMismatchError,
    UnknownNameError,
)
from ..inputs import InputLimits, check_lookup, load_json
from ..loop.context import last_seq
from ..loop.task_claims import check_task_owner, task_limited
from ..records import ActionRequest, AuditEvent, OutcomeStatus, Proposal
from ..storage import LimitReached, NewEvent, RunEnded, RunNotNew, SubjectMoved, WaitingCap
from .autonomy import AutonomyBook
from .budgets import (
    RESERVE_TRIES,
    RESERVED,
    BudgetBook,
    Scope,
    alert_event,
    reservation_event,
)
from .definitions import load_recorded_workflow
from .ending import ended_error
from .errors import ModelError, WorkflowError
from .model import ChatMessage, ModelClient, ModelRequest, package_versions
from .steps import (
    HumanStep,
    ModelStep,
    Step,
    ToolStep,
    Workflow,
    asked,
    brief,
    effective_tools,
    fill,
    render,
    resolve,
    should_run,
    step_input,
)

if TYPE_CHECKING:
    from ..loop.runtime import Runtime
    from ..storage import Journal

ENGINE_ACTOR = "cradle-kg/workflow"
Key = tuple[str, str]


#: the kinds of a step's events the fold reads (about ``step:<run>/<step>``), and of the
#: run's end (about ``workflow:<id>``)
_STEP_KINDS = ("step.started", "step.skipped", "step.completed", "step.failed",
               "human.requested", "human.decided")
_ENDS = ("workflow.completed", "workflow.failed")

#: reads of a step before its decision gives up (another answer or event kept landing)
_DECIDE_ATTEMPTS = 3
#: a decision's (or an approval's) status when it stands and the walk after it did not go
#: on here: refused (another walk took the run on first, the workflow file changed)
NOT_CONTINUED = "not_continued"


@dataclass
class RunStatus:
    run_id: str
    workflow: str
    status: str  # completed | failed | waiting_human | waiting_approval | not_continued
    outputs: dict[str, Any] = field(default_factory=dict)
    step: str | None = None
    code: str | None = None
    reason: str | None = None


@dataclass
class _Done:
    output: dict[str, Any]
    by: str


@dataclass
class _Wait:
    status: str


@dataclass
class _Fail:
    code: str
    reason: str


@dataclass
class RunFold:
    """A workflow run's state folded from its own events (:func:`_fold`)."""
    started: AuditEvent | None = None
    finished: AuditEvent | None = None
    completed: dict[Key, dict[str, Any]] = field(default_factory=dict)
    failed: dict[Key, dict[str, Any]] = field(default_factory=dict)
    begun: set[Key] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)
    requested: dict[Key, AuditEvent] = field(default_factory=dict)
    decided: dict[Key, dict[str, Any]] = field(default_factory=dict)
    #: each step's subject: the seq of its newest event (of any kind), probed before its
    #: events were read — what the walk's next event about it is written ``if_last`` on
    heads: dict[str, int] = field(default_factory=dict)


def _fold(events: Sequence[AuditEvent]) -> RunFold:
    """A run's workflow state from its own events (:meth:`Engine._events`): a tool step's
    recorded result is read apart (:meth:`Engine._recorded`)."""
    f = RunFold()
    for ev in events:
        p = ev.payload
        key: Key = (str(p.get("step")), str(p.get("input_hash")))
        if ev.kind == "workflow.started":
            f.started = ev
        elif ev.kind in ("workflow.completed", "workflow.failed"):
            f.finished = ev
        elif ev.kind == "step.started":
            f.begun.add(key)
        elif ev.kind == "step.skipped":
            f.skipped.add(key[0])
        elif ev.kind == "step.completed":
            f.completed[key] = p["output"]
        elif ev.kind == "step.failed":
            f.failed[key] = p
        elif ev.kind == "human.requested":
            f.requested[key] = ev
        elif ev.kind == "human.decided":
            f.decided[key] = p["decision"]
    return f


def started_event(journal: Journal, run_id: str) -> AuditEvent:
    """The run's ``workflow.started``: its first event (written ``if_new_run``), one
    row read — who the workflow's agent is does not cost the run's events. A run id no
    journal can hold is refused first (``tests/security/test_600``)."""
    check_lookup(run_id, where="run_id")
    first = next(iter(journal.events(run_id=run_id, batch=1)), None)
    if first is None or first.kind != "workflow.started":
        raise UnknownNameError(f"unknown workflow run `{run_id}`")
    return first


def run_workflow(journal: Journal, run_id: str) -> Workflow:
    """The workflow a run runs, from its ``workflow.started`` alone (one row; its file
    read and checked against the recorded hash: a :class:`~cradle_kg.errors.CradleError`
    when it changed or went)."""
    p = started_event(journal, run_id).payload
    return load_recorded_workflow(str(p["definition"]), version=str(p["version"]))


def _not_waiting(run_id: str, step_id: str, end: AuditEvent) -> CradleError:
    """Why an answer to a step of a run that ended is refused: the cancel, named
    (``run_cancelled``), or — a run that completed or failed — that the step does not wait,
    as before there were cancels."""
    error = ended_error(run_id, end)
    if error.code == "run_cancelled":
        return error
    return InputError(f"run `{run_id}` does not wait for a human on step `{step_id}`")


class Engine:
    """Runs workflows over one runtime (its journal, gates, gateway and clock)."""

    def __init__(self, runtime: Runtime, *, client: ModelClient,
                 packages: Mapping[str, str] | None = None,
                 model_override: str | None = None, budgets: str | None = RESERVED) -> None:
        self.rt = runtime
        self.client = client
        self.packages = dict(packages) if packages is not None else package_versions()
        #: how the runs it starts charge their model calls (``workflow.started``'s
        #: ``budgets``): a strict replay passes the recorded run's (None: recorded before)
        self.charging = budgets
        self.model_override = model_override
        self.budgets = BudgetBook(runtime.journal)
        self.autonomy = AutonomyBook(runtime.journal, runtime.approvals,
                                     append=runtime.context.append, clock=runtime.clock)
        #: the step subjects of the run being walked and their newest seqs (RunFold.heads)
        self._heads: dict[str, int] = {}

    # --- journal -----------------------------------------------------------------

    def _emit(self, run_id: str, kind: str, subject: str, payload: dict[str, Any], *,
              actor: str = ENGINE_ACTOR, at: datetime | None = None,
              if_new_run: bool = False, waiting: WaitingCap | None = None) -> AuditEvent:
        # INVARIANT: one clock reading per event, and every reading is journaled
        # INVARIANT: a step's event is written only while the run has not ended, checked
        # under the journal's writer's lock (if_run_open): a person's cancel written by
        # another process while this walker ran stops it there (tests/security/test_288)
        # INVARIANT: and only over the step's events the walk read (if_last): two walks of
        # one run (an answer's and a resume) never both write a step (test_290)
        return self._append(NewEvent(
            run_id=run_id, kind=kind, subject=subject, actor=actor, at=at or self.rt.clock(),
            payload=payload, if_new_run=if_new_run, waiting=waiting,
            if_run_open=not if_new_run))

    def _append(self, event: NewEvent) -> AuditEvent:
        """``event`` appended ``if_last`` on its step subject's newest seq the walk knows
        (:attr:`RunFold.heads`; none for another subject), that seq moved on to it."""
        last = self._heads.get(event.subject)
        written = self.rt.context.append([replace(event, if_last=last)])[0]
        if last is not None:
            self._heads[event.subject] = written.seq
        return written

    def _ended(self, run_id: str) -> RunStatus:
        """The run ended under this walker (another process's cancel or walk): where it
        stands now, or the typed refusal when a person cancelled it."""
        wf, fold = self.workflow_of(run_id)
        if fold.finished is None:  # not ended after all: never a walk past a refusal
            raise WorkflowError(f"run `{run_id}`: the journal refused a step as after the "
                                "run's end, and no end is recorded", hint="resume it")
        return self._finished(run_id, wf, fold)

    def _started(self, run_id: str) -> AuditEvent:
        return started_event(self.rt.journal, run_id)

    def _events(self, run_id: str, workflow_id: str, step_ids: Sequence[str],
                started: AuditEvent) -> list[AuditEvent]:
        """The events the fold reads, without the ones the workflow's agent writes into
        its run at will (its proposals and their gates, approvals, outcomes: it owns the
        run). The engine writes each step's ``step.*`` and ``human.*`` events about
        ``step:<run>/<step>`` and the run's end about ``workflow:<id>``; each subject is
        read in the run for those kinds alone (``events_for_subject(kinds=)``: the others
        are skipped in the index, not decoded), and merged in journal order — the
        sequence of those kinds the fold of the whole run saw. A tool step's recorded
        outcome is read when the step needs it (:meth:`_recorded`). Before, every event
        of the run was decoded (``tests/security/test_91``)."""
        return self._read(run_id, workflow_id, step_ids, started)[0]

    def _read(self, run_id: str, workflow_id: str, step_ids: Sequence[str],
              started: AuditEvent) -> tuple[list[AuditEvent], dict[str, int]]:
        """:meth:`_events`, and each step subject's newest seq probed before its read (an
        event landing in between makes the walk's guard refuse, never slip under it)."""
        journal = self.rt.journal
        found = [started, *journal.events_for_subject(
            f"workflow:{workflow_id}", run_id=run_id, kinds=_ENDS)]
        heads: dict[str, int] = {}
        for step_id in step_ids:
            subject = f"step:{run_id}/{step_id}"
            heads[subject] = journal.subject_last(subject)
            found += journal.events_for_subject(subject, run_id=run_id, kinds=_STEP_KINDS)
        return sorted(found, key=lambda ev: ev.seq), heads

    def _first_received(self, run_id: str, proposal_id: str) -> AuditEvent | None:
        """The first ``proposal.received`` under ``proposal_id`` in the run (one row)."""
        first = self.rt.journal.subject_events(proposal_id, "proposal.received", limit=1,
                                               newest=False, run_id=run_id)
        return first[0] if first else None

    def _began_at(self, run_id: str, step_id: str, input_hash: str) -> int:
        """The seq of the step's first ``step.started`` for this input (it was written)."""
        started = self.rt.journal.events_for_subject(f"step:{run_id}/{step_id}",
                                                     run_id=run_id, kinds=("step.started",))
        return min(e.seq for e in started if e.payload.get("input_hash") == input_hash)

    def _recorded(self, run_id: str, proposal_id: str, agent: str) -> dict[str, Any] | None:
        """The executed outcome of a tool step's proposal, if it ran: the proposal's last
        outcome in the run (``latest_outcome``, one row: a resubmission of an executed
        proposal replays it and writes no new outcome; a reuse of its id refused is
        apart) when it is ``executed`` and the proposal was first submitted in the run by
        the workflow's agent — never one another agent put under its id."""
        latest = self.rt.journal.latest_outcome(run_id, proposal_id)
        if latest is None or latest.payload["outcome"]["status"] != OutcomeStatus.EXECUTED:
            return None
        first = self._first_received(run_id, proposal_id)
        if first is None or first.actor != agent or first.seq > latest.seq:
            return None
        return dict(latest.payload["outcome"])

    # --- public ------------------------------------------------------------------

    def start(self, workflow: Workflow, inputs: Mapping[str, Any], *,
              run_id: str | None = None, started_by: str | None = None,
              waiting: WaitingCap | None = None) -> RunStatus:
        """Start a run. ``started_by``: the identity that asked for it (the JSON API's
        caller), recorded so that it never answers the run's human steps — a request and
        its review by one person (``tests/security/test_177``); None (the command line, a
        host's code): nobody recorded, as before. ``waiting``: the start is written only
        while fewer than its limit wait for a person on the agent's behalf, counted by the
        journal under its writer's lock (:class:`~cradle_kg.storage.WaitingReached`)."""
        try:
            data = workflow.input_model.model_validate(dict(inputs)).model_dump(mode="json")
        except ValidationError as exc:
            raise InputError(f"workflow `{workflow.id}`: input: {brief(exc)}") from exc
        now = self.rt.clock()
        input_hash = content_hash(data)
        run = run_id or "wf:" + content_hash([workflow.id, input_hash, iso(now)])[7:31]
        # INVARIANT: the run's tool steps propose in the task its id names: another agent's
        # task under a `task` limit is refused here, nothing journaled (before, a run named
        # after it spent that agent's limit: tests/security/test_391)
        if task_limited(self.rt.config, agent_id=workflow.agent, task_id=run):
            check_task_owner(self.rt.journal, run, workflow.agent,
                             hint="start the workflow under a run id of your own (`--run`, the "
                                  "API's `run_id`)")
        # INVARIANT: the run's model calls are charged to its agent's configured tenant,
        # never to one its file names (as a proposal's tenant claim is denied): a file
        # naming `acme` for an agent of `default` spent acme's budget and never reached its
        # own (tests/security/test_406). Refused here, nothing journaled.
        tenant = self.rt.config.tenant_of(workflow.agent)
        if workflow.tenant != tenant:
            raise TenantMismatchError(
                f"workflow `{workflow.id}` names tenant `{workflow.tenant}`, its agent "
                f"`{workflow.agent}` belongs to tenant `{tenant}` (configured)",
                hint=f"write `tenant: {tenant}` in the workflow, or configure the agent's "
                     "tenant")
        try:
            # INVARIANT: a workflow run's first event is its start, checked by the journal
            # under its writer's lock (if_new_run): an agent's claim of the run landing a
            # moment before would otherwise make it that agent's (tests/security/test_44)
            self._emit(run, "workflow.started", f"workflow:{workflow.id}@{workflow.version}", {
                "workflow": workflow.id, "version": workflow.version,
                "definition": workflow.definition, "input": data, "input_hash": input_hash,
                "agent": workflow.agent, "tenant": workflow.tenant, "packages": self.packages,
                "steps": [[s.id, s.kind] for s in workflow.steps],
                # how this run's model calls are charged (a run recorded before has no key:
                # its calls are checked, then charged by model.called, and replay the same)
                **({"budgets": self.charging} if self.charging is not None else {}),
                **({"started_by": started_by} if started_by is not None else {})},
                at=now, if_new_run=True, waiting=waiting)
        except RunNotNew:
            raise InputError(f"run `{run}` already exists",
                             hint="use `advance` to resume it") from None
        return self.advance(run)

    def workflow(self, run_id: str) -> Workflow:
        """The workflow a run runs, from its ``workflow.started`` alone (one row)."""
        return run_workflow(self.rt.journal, run_id)

    def started_by(self, run_id: str) -> str | None:
        """Who asked for the run, as its ``workflow.started`` recorded it (one row), or
        None when nobody was recorded."""
        who = self._started(run_id).payload.get("started_by")
        return who if isinstance(who, str) else None

    def agent_of(self, run_id: str) -> str:
        """The workflow's agent as the run's ``workflow.started`` recorded it: one row, no
        workflow file read (a file edited since still says whose run it is:
        ``tests/security/test_169``)."""
        started = self._started(run_id).payload
        if isinstance(started.get("agent"), str):
            return str(started["agent"])
        return self.workflow(run_id).agent  # a start recorded without it: from the file

    def workflow_of(self, run_id: str) -> tuple[Workflow, RunFold]:
        """The workflow and its fold: its own events, not its agent's (:meth:`_events`)."""
        started = self._started(run_id)
        p = started.payload
        wf = load_recorded_workflow(str(p["definition"]), version=str(p["version"]))
        events, heads = self._read(run_id, wf.id, [s.id for s in wf.steps], started)
        fold = _fold(events)
        fold.heads = heads
        return wf, fold

    def recorded_fold(self, run_id: str) -> tuple[list[tuple[str, str]], RunFold]:
        """The run's steps (id, kind) as its ``workflow.started`` recorded them, and its
        fold, without reading the workflow file — for showing a run whose file changed or
        went since it started (:func:`runner.status`); never for running one."""
        started = self._started(run_id)
        p = started.payload
        steps = [(str(i), str(k)) for i, k in p.get("steps", [])]
        return steps, _fold(self._events(run_id, str(p["workflow"]), [i for i, _ in steps],
                                         started))

    def advance(self, run_id: str) -> RunStatus:
        """Walk the steps from the journal; return where the run stands now."""
        wf, fold = self.workflow_of(run_id)
        assert fold.started is not None
        if fold.finished is not None:
            return self._finished(run_id, wf, fold)
        self._heads = dict(fold.heads)
        try:
            return self._walk(run_id, wf, fold)
        except RunEnded:
            return self._ended(run_id)
        except SubjectMoved as moved:
            raise RunMovedError(
                f"run `{run_id}`: `{moved.subject}` moved while this walk ran (another walk "
                "or an answer wrote it first); nothing of this step was written",
                hint="read the run's status: it is where the other left it") from None
        finally:
            self._heads = {}

    def _walk(self, run_id: str, wf: Workflow, fold: RunFold) -> RunStatus:
        assert fold.started is not None
        context: dict[str, Any] = {"input": fold.started.payload["input"]}
        for step in wf.steps:
            if not should_run(step, context):
                if step.id not in fold.skipped:
                    self._emit(run_id, "step.skipped", f"step:{run_id}/{step.id}",
                               {"step": step.id, "when": list(step.when or ())})
                continue
            result = self._step(run_id, wf, step, context, fold)
            if isinstance(result, _Wait):
                return RunStatus(run_id, wf.id, result.status, self._outputs(context),
                                 step=step.id)
            if isinstance(result, _Fail):
                self._emit(run_id, "workflow.failed", f"workflow:{wf.id}",
                           {"step": step.id, "code": result.code, "reason": result.reason})
                return RunStatus(run_id, wf.id, "failed", self._outputs(context),
                                 step=step.id, code=result.code, reason=result.reason)
            context[step.id] = result.output
        self._emit(run_id, "workflow.completed", f"workflow:{wf.id}",
                   {"outputs": {k: content_hash(v) for k, v in self._outputs(context).items()}})
        return RunStatus(run_id, wf.id, "completed", self._outputs(context))

    def decide(self, run_id: str, step_id: str, decision: Mapping[str, Any], *, by: str,
               info_requested: Sequence[str] = (), note: str | None = None) -> RunStatus:
        """Record a human decision on a waiting step, then continue the run.

        INVARIANT: decided once — the decision is written only over the step's events it
        was decided on (``if_last``, as an approval's): of two answers racing, one is
        journaled; the other reads again and finds the step no longer waiting."""
        subject = f"step:{run_id}/{step_id}"

        def decision_events() -> list[NewEvent]:
            # the step's events before the fold: an answer written after this read moves
            # the subject, and the append is refused
            seen = self.rt.journal.events_for_subject(subject)
            wf, fold = self.workflow_of(run_id)
            step = wf.step(step_id)
            if fold.finished is not None:  # ended: nothing waits any more
                raise _not_waiting(run_id, step_id, fold.finished)
            pending = [(k, ev) for k, ev in fold.requested.items()
                       if k[0] == step_id and k not in fold.decided]
            if not isinstance(step, HumanStep) or not pending:
                raise InputError(f"run `{run_id}` does not wait for a human on step "
                                 f"`{step_id}`")
            (_, input_hash), request = pending[-1]
            try:
                value = step.output_model.model_validate(dict(decision)).model_dump(
                    mode="json")
            except ValidationError as exc:
                raise InputError(f"step `{step_id}`: decision: {brief(exc)}") from exc
            now = self.rt.clock()
            rp = request.payload
            return [NewEvent(
                run_id=run_id, kind="human.decided", subject=subject, actor=by,
                at=now, if_last=last_seq(seen), if_run_open=True, payload={
                    "workflow": wf.id, "step": step_id, "input_hash": input_hash,
                    "context": rp["context"], "context_hash": content_hash(rp["context"]),
                    "rule_fields": rp["rule_fields"],
                    "decision_field": rp["decision_field"], "decision": value,
                    "by": by, "info_requested": list(info_requested), "note": note,
                    "delay_seconds": round((now - request.at).total_seconds(), 3),
                    "suggestion": rp.get("suggestion"),
                    "rule_version": rp.get("rule_version")})]

        try:
            self.rt.context.append_unmoved(decision_events, attempts=_DECIDE_ATTEMPTS,
                                           gave_up=InputError(
                                               f"step `{step_id}` of run `{run_id}`: other "
                                               "events about it keep arriving first; decide "
                                               "again"))
        except RunEnded:  # a cancel (or the run's end) landed after the read: refused
            _, fold = self.workflow_of(run_id)
            if fold.finished is None:
                raise
            raise _not_waiting(run_id, step_id, fold.finished) from None
        try:
            return self.advance(run_id)
        except RunMovedError as exc:
            # INVARIANT: the answer stands; the walk after it is another's (a resume that
            # read the answer first): said beside the answer, never in its place (test_290)
            return RunStatus(run_id, self.workflow(run_id).id, NOT_CONTINUED, step=step_id,
                             code=exc.code, reason=exc.message)

    @staticmethod
    def _outputs(context: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in context.items() if k != "input"}

    def _finished(self, run_id: str, wf: Workflow, fold: RunFold) -> RunStatus:
        assert fold.finished is not None
        outputs = {k[0]: v for k, v in fold.completed.items()}
        p = fold.finished.payload
        if fold.finished.kind == "workflow.completed":
            return RunStatus(run_id, wf.id, "completed", outputs)
        # INVARIANT: a cancelled run is not reported as walked: a walk (resume, an
        # approval's) and an answer are refused, naming the cancel (test_287)
        error = ended_error(run_id, fold.finished)
        if error.code == "run_cancelled":
            raise error
        return RunStatus(run_id, wf.id, "failed", outputs, step=p["step"], code=p["code"],
                         reason=p["reason"])

    # --- steps -------------------------------------------------------------------

    def _step(self, run_id: str, wf: Workflow, step: Step, context: Mapping[str, Any],
              fold: RunFold) -> _Done | _Wait | _Fail:
        try:
            data = step_input(step, context).model_dump(mode="json")
        except WorkflowError as exc:
            return self._failed(run_id, step, "", _Fail("input_contract", exc.message))
        key: Key = (step.id, content_hash(data))
        if key in fold.completed:  # INVARIANT: same step, same input: never executed twice
            return _Done(fold.completed[key], "journal")
        if key in fold.failed:
            return _Fail(str(fold.failed[key]["code"]), str(fold.failed[key]["reason"]))
        result: _Done | _Wait | _Fail
        if isinstance(step, ModelStep):
            result = self._model(run_id, wf, step, data, key, fold)
        elif isinstance(step, ToolStep):
            result = self._tool(run_id, wf, step, data, key, context, fold)
        elif isinstance(step, HumanStep):
            result = self._human(run_id, wf, step, data, key, fold)
        else:
            result = _Fail("unknown_step", f"step `{step.id}` has an unknown kind")
        if isinstance(result, _Fail):
            return self._failed(run_id, step, key[1], result)
        if isinstance(result, _Done):
            self._emit(run_id, "step.completed", f"step:{run_id}/{step.id}", {
                "step": step.id, "kind": step.kind, "input_hash": key[1],
                "output": result.output, "output_hash": content_hash(result.output),
                "by": result.by})
        return result

    def _failed(self, run_id: str, step: Step, input_hash: str, fail: _Fail) -> _Fail:
        self._emit(run_id, "step.failed", f"step:{run_id}/{step.id}", {
            "step": step.id, "kind": step.kind, "input_hash": input_hash, "code": fail.code,
            "reason": fail.reason})
        return fail

    def _begin(self, run_id: str, step: Step, data: dict[str, Any], key: Key, fold: RunFold,
               **extra: Any) -> None:
        if key not in fold.begun:
            self._emit(run_id, "step.started", f"step:{run_id}/{step.id}", {
                "step": step.id, "kind": step.kind, "input": data, "input_hash": key[1],
                **extra})

    def _model(self, run_id: str, wf: Workflow, step: ModelStep, data: dict[str, Any],
               key: Key, fold: RunFold) -> _Done | _Fail:
        tools = effective_tools(self.rt, wf.agent, step.tools) if step.tools else []
        self._begin(run_id, step, data, key, fold, effective_tools=tools,
                    prompt_version=step.prompt_version)
        try:
            prompt = render(step.prompt, data) if step.template else step.prompt
        except WorkflowError as exc:
            return _Fail("input_contract", exc.message)
        system = prompt + (f"\nTools you may propose: {', '.join(tools)}." if tools else "")
        messages = [ChatMessage(role="system", content=system),
                    ChatMessage(role="user", content=canonical_json(data))]
        scope = Scope(wf.tenant, wf.id, run_id)
        assert fold.started is not None
        reserved = fold.started.payload.get("budgets") == RESERVED
        problem = ""
        for attempt in (1, 2):
            request = ModelRequest(
                model=self.model_override or step.model, messages=tuple(messages),
                schema_name=step.output_model.__name__, max_tokens=step.max_tokens,
                response_schema=step.output_model.model_json_schema())
            refused = self._reserve(scope, step, attempt, request.model) if reserved \
                else self._checked(scope, step)
            if refused is not None:
                return refused
            try:
                response = self.client.complete(request)
            except ModelError as exc:  # the reservation stays charged (see budgets)
                return _Fail("model_unavailable", exc.message)
            self._emit(run_id, "model.called", f"step:{run_id}/{step.id}", {
                "step": step.id, "attempt": attempt, "model": request.model,
                "prompt_version": step.prompt_version, "packages": self._packages(fold),
                "request": request.model_dump(mode="json"), "request_hash": request.hash,
                "response": response.model_dump(mode="json"), "cost": step.cost,
                "tenant": wf.tenant, "workflow": wf.id, **({"reserved": True} if reserved
                                                           else {})})
            for standing in self.budgets.alerts(scope):
                self.rt.context.append([replace(alert_event(
                    standing, run_id=run_id, actor=ENGINE_ACTOR, now=self.rt.clock()),
                    if_run_open=True)])
            try:
                output = step.output_model.model_validate_json(response.content)
                # INVARIANT: and read as an agent's document is (no NaN or infinity,
                # integers and floats of the journal's digits, no key twice, bounded
                # depth): `1e400` passed a `number` schema and was journaled as null, a
                # 400-digit integer reached a rule's float() (tests/security/test_411).
                # After the schema, so that an answer it refuses is answered as before
                # (the retry's words are in the request a replay reproduces)
                load_json(response.content, limits=self._answer_limits,
                          source="the model's answer")
                return _Done(output.model_dump(mode="json"), "model")
            except (InputError, ValidationError) as exc:
                problem = exc.message if isinstance(exc, InputError) else brief(exc)
                messages += [ChatMessage(role="assistant", content=response.content),
                             ChatMessage(role="user", content=(
                                 f"The answer does not match the JSON schema "
                                 f"`{step.output_model.__name__}`: {problem}. "
                                 "Answer again with JSON only."))]
        return _Fail("output_contract", f"the model's output failed its schema twice: {problem}")

    @property
    def _answer_limits(self) -> InputLimits:
        """The limits a model's answer is read within: the home's input limits, its size
        bounded as a tool's answer is (``max_output_bytes``, as :data:`.model.
        MAX_ANSWER_BYTES`)."""
        limits = self.rt.config.input_limits
        return limits.model_copy(update={"max_bytes": limits.max_output_bytes})

    def _checked(self, scope: Scope, step: ModelStep) -> _Fail | None:
        """A run recorded before reservations (no ``budgets`` key in ``workflow.started``):
        its calls are checked, then charged by their ``model.called`` — as when it was
        recorded, so that its strict replay reproduces it. Such a run, advanced by several
        workers at once, can still pass a budget twice (see :mod:`.budgets`)."""
        try:
            self.budgets.check(scope, step.cost)
        except BudgetExceededError as exc:
            return self._refused(scope.run_id, step, exc)
        return None

    def _reserve(self, scope: Scope, step: ModelStep, attempt: int,
                 model: str) -> _Fail | None:
        """Charge one call attempt to its budgets before it is made (``model.reserved``,
        carrying a cap per budget: see :mod:`.budgets`); the refusal when one would be
        exceeded. A reservation another worker's took past a budget (``LimitReached``,
        nothing written) is checked again on what the journal holds now."""
        run_id = scope.run_id
        now: datetime | None = None
        for _ in range(RESERVE_TRIES):
            try:
                caps = self.budgets.reserve(scope, step.cost)
            except BudgetExceededError as exc:
                return self._refused(run_id, step, exc)
            # INVARIANT: one clock reading per event (read once the check passed; the
            # same reading again if the append must be retried)
            now = now or self.rt.clock()
            try:
                self._append(replace(reservation_event(
                    scope, caps, step=step.id, attempt=attempt, model=model, cost=step.cost,
                    actor=ENGINE_ACTOR, now=now), if_run_open=True))
                return None
            except LimitReached:
                continue
        raise WorkflowError(
            f"run `{run_id}`, step `{step.id}`: other workers' model calls kept reaching its "
            f"budgets first ({RESERVE_TRIES} tries); nothing was charged or called",
            hint="advance the run again")

    def _packages(self, fold: RunFold) -> dict[str, str]:
        assert fold.started is not None
        return dict(fold.started.payload.get("packages", {}))

    def _refused(self, run_id: str, step: Step, exc: BudgetExceededError) -> _Fail:
        self._emit(run_id, "budget.refused", f"step:{run_id}/{step.id}",
                   {"step": step.id, "code": exc.reason_code, "message": exc.message})
        self._emit(run_id, "task.opened", f"task:{run_id}/{step.id}", {
            "step": step.id, "code": exc.reason_code, "message": exc.message,
            "action": "raise the budget or cancel the run; no cheaper model is substituted"})
        return _Fail(exc.reason_code, exc.message)

    def _tool(self, run_id: str, wf: Workflow, step: ToolStep, data: dict[str, Any], key: Key,
              context: Mapping[str, Any], fold: RunFold) -> _Done | _Wait | _Fail:
        try:
            tool = str(resolve(step.tool_from, context)) if step.tool_from else step.tool
        except KeyError:
            return _Fail("input_contract", f"`{step.tool_from}` has no value")
        allowed = effective_tools(self.rt, wf.agent, step.tools or (tool,))
        self._begin(run_id, step, data, key, fold, effective_tools=allowed, tool=tool)
        if tool not in allowed:
            return _Fail("tool_not_allowed", f"`{tool}` is not in the step's effective "
                         f"whitelist {allowed} (agent `{wf.agent}` ∩ step `{step.id}`)")
        try:  # INVARIANT: a target its input does not fit fails the step (test_408)
            target = fill(step.target, data)
        except WorkflowError as exc:
            return _Fail("input_contract", f"`target`: {exc.message}")
        proposal = Proposal(
            id=f"{run_id}/{step.id}/{key[1][7:19]}", task_id=run_id, run_id=run_id,
            agent_id=wf.agent, tenant=wf.tenant,
            action=ActionRequest(action_type=tool, target=target, arguments=data))
        # INVARIANT: the step's proposal is the step's only when first received after the
        # step began: the agent owns the run and knows the id, and its own proposal made
        # before a review was taken as the reviewed step's (tests/security/test_187)
        first = self._first_received(run_id, proposal.id)
        if first is not None and first.seq < self._began_at(run_id, step.id, key[1]):
            return _Fail("preempted", f"proposal `{proposal.id}` was made in the run by "
                         f"`{first.actor}` before step `{step.id}` began: its action did not "
                         "wait for the steps before it")
        recorded = self._recorded(run_id, proposal.id, wf.agent)
        if recorded is not None:
            output = recorded["observation"]["output"]
        else:
            # INVARIANT: the step's proposal, up to its action's intent, is written only while
            # the run has not ended (under the writer's lock): a cancel landing while the walk
            # read, or while gate 1 weighed the proposal, stops the action (test_288)
            try:
                with self.rt.context.while_run_open(run_id):
                    # the step claims its task for the workflow's agent, as a proposal
                    # does at an agent's door (tests/security/test_391)
                    outcome = self.rt.submit(proposal, task_for=wf.agent)
            except TaskOwnershipError as taken:  # another agent's since the run started
                return _Fail(taken.code, taken.message)
            if outcome.status is OutcomeStatus.AWAITING_APPROVAL:
                return _Wait("waiting_approval")
            if not outcome.ok or outcome.observation is None:
                return _Fail(f"tool_{outcome.status}", "; ".join(outcome.reasons)
                             or f"the tool step ended `{outcome.status}`")
            output = outcome.observation.output
        try:
            return _Done(step.output_model.model_validate(output).model_dump(mode="json"), "tool")
        except ValidationError as exc:
            return _Fail("output_contract", f"tool output: {brief(exc)}")

    def _human(self, run_id: str, wf: Workflow, step: HumanStep, data: dict[str, Any], key: Key,
               fold: RunFold) -> _Done | _Wait | _Fail:
        self._begin(run_id, step, data, key, fold)
        if key in fold.decided:
            return _Done(fold.decided[key], "human")
        inputs = {f: data.get(f) for f in step.rule_fields}
        routing = self.autonomy.route(wf.id, step.id, inputs, asked=step, agent=wf.agent)
        reasons = list(routing.reasons)
        if routing.automate:
            try:
                value = step.output_model.model_validate(
                    {step.decision_field: routing.decision}).model_dump(mode="json")
                self._emit(run_id, "human.automated", f"step:{run_id}/{step.id}", {
                    "workflow": wf.id, "step": step.id, "input_hash": key[1], "decision": value,
                    "rule_version": routing.rule_version, "inputs": inputs})
                return _Done(value, "rule")
            except ValidationError as exc:
                reasons.append(f"the rule's decision does not fit the step's output: {brief(exc)}")
        if key not in fold.requested:
            self._emit(run_id, "human.requested", f"step:{run_id}/{step.id}", {
                "workflow": wf.id, "step": step.id, "input_hash": key[1], "context": data,
                "rule_fields": list(step.rule_fields), "decision_field": step.decision_field,
                "stage": str(routing.stage), "suggestion": routing.suggestion,
                "rule_version": routing.rule_version, "reasons": reasons,
                # a step from a file says what it asks (Python steps journal as before)
                **({"question": asked(step, data), "answers": list(step.answers)}
                   if step.question else {})})
        return _Wait("waiting_human")
