"""Workflow files from the shell and the API: find, list, run, read, decide, resume.

One service layer, so ``cradle-kg workflow ...``, ``cradle-kg step decide`` and
``/api/workflows...`` say the same things: a run's ``state`` is :class:`~cradle_kg.runs.
RunState`, a step's ``state`` is one of ``pending``, ``running``, ``waiting_for_person``,
``completed``, ``failed``, ``skipped``, ``cancelled`` (not done when a person cancelled the
run: ``workflow cancel``); a waiting human step carries its question (filled
with its input), its allowed answers and why it waits.

Reading a run's status never appends to the journal; only ``start``, ``decide`` and
``resume`` do (and :func:`.cancel.cancel`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ApprovalError, CradleError, InputError, UnknownNameError, WorkflowFileError
from ..inputs import DEFAULT_LIMITS, InputLimits, check_human_input, load_json
from ..loop.approvals import excluded_for_agent
from ..loop.proposal import reserved_run
from ..runs import cancelled_by, state_and_why
from ..storage import WaitingCap
from .definitions import load_file
from .engine import NOT_CONTINUED, Engine, RunFold, RunStatus
from .model import client_for
from .steps import HumanStep, ModelStep, Step, ToolStep, Workflow, render

if TYPE_CHECKING:
    from ..loop.runtime import Runtime

SUFFIXES = (".yaml", ".yml")
#: the longest answer or note a person may give a human step
MAX_TEXT = 10_000


def workflows_dir(home: Path) -> Path:
    """Where a home keeps its workflow files (``workflow list`` reads them)."""
    return home / "workflows"


def find_definition(home: Path, name: str, *, paths: bool = True) -> Path:
    """A workflow file: a path (unless ``paths`` is off, as for the API), or the name of a
    file in the home's ``workflows/``."""
    path = Path(name)
    if paths and path.is_file():
        return path
    if "/" not in name and name not in ("", ".", ".."):
        for suffix in SUFFIXES:
            candidate = workflows_dir(home) / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
    raise UnknownNameError(f"no workflow file `{name}`",
                           hint="give a path, or a name from `cradle-kg workflow list`")


def list_definitions(home: Path) -> list[dict[str, Any]]:
    """Every workflow file of the home, valid or not (a broken one says why)."""
    folder = workflows_dir(home)
    files = sorted(p for p in folder.iterdir() if p.suffix in SUFFIXES) if folder.is_dir() else []
    out: list[dict[str, Any]] = []
    for path in files:
        try:
            out.append({**describe(load_file(path)), "file": str(path), "valid": True})
        except WorkflowFileError as exc:
            out.append({"id": path.stem, "file": str(path), "valid": False,
                        "problems": list(exc.problems)})
        except CradleError as exc:
            out.append({"id": path.stem, "file": str(path), "valid": False,
                        "problems": [exc.message]})
    return out


def _step_dict(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {"id": step.id, "kind": step.kind,
                           "inputs": dict(step.inputs)}
    if step.when:
        out["when"] = {"ref": step.when[0], "equals": step.when[1]}
    if isinstance(step, HumanStep):
        out |= {"question": step.question, "answers": list(step.answers),
                "decision_field": step.decision_field, "scope": step.scope}
    elif isinstance(step, ToolStep):
        out |= {"tool": step.tool, "tools": list(step.tools or (step.tool,)),
                "target": step.target}
    elif isinstance(step, ModelStep):
        out |= {"model": step.model, "tools": list(step.tools),
                "prompt_version": step.prompt_version}
    return out


def describe(wf: Workflow) -> dict[str, Any]:
    return {"id": wf.id, "version": wf.version, "agent": wf.agent, "tenant": wf.tenant,
            "definition": wf.definition, "input": wf.input_model.model_json_schema(),
            "steps": [_step_dict(s) for s in wf.steps]}


def open_engine(rt: Runtime, *, base_url: str | None = None,
                api_key: str | None = None) -> Engine:
    """An engine over ``rt``; with no model server, model steps fail closed."""
    return Engine(rt, client=client_for(base_url, api_key))


def parse_input(text: str, limits: InputLimits = DEFAULT_LIMITS, *,
                source: str = "--input") -> dict[str, Any]:
    """A JSON object a person typed (a run's ``--input``, a human step's whole answer),
    read by the strict loader as every other document from a person or an agent: a key
    given twice, ``NaN``, runaway nesting or a value past ``limits`` is a one-line
    :class:`InputError` naming ``source``. Before, ``json.loads`` took the last of two
    keys and ended in a ``RecursionError`` (``tests/security/test_61``)."""
    value = load_json(text, limits=limits, source=source)
    if not isinstance(value, dict):
        raise InputError(f"`{source}`: a JSON object is expected")
    return value


def outcome(status: RunStatus) -> dict[str, Any]:
    return {"run_id": status.run_id, "workflow": status.workflow, "status": status.status,
            "step": status.step, "code": status.code, "reason": status.reason,
            "outputs": status.outputs}


_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:._-]{0,99}$")


#: the run ids the other entry points derive: a proposal's ``run:<task_id>``, an MCP or
#: LangGraph session's ``run:<agent id>/<session>``, a plan's ``run:plan:<id>``
DERIVED_RUNS = "run:"


def check_run_id(run_id: str) -> str:
    """A run id a caller chose for a new workflow run (``workflow run --run``, the JSON
    API's ``run_id``). Not one the other entry points derive (:data:`DERIVED_RUNS`): a
    workflow run is its workflow's agent's from its ``workflow.started``, so a workflow
    started under ``run:<task_id>`` took that run from the agent whose proposals for the
    task would land there — refused in its own run (``tests/security/test_41``)."""
    if not _RUN_ID.match(run_id):
        raise InputError(f"`{run_id}` is not a run id", hint="letters, digits and `:._-`, "
                                                            "at most 100")
    if run_id.startswith(DERIVED_RUNS):
        raise InputError(f"`{run_id}`: a workflow run's id may not begin with "
                         f"`{DERIVED_RUNS}` (the runs of proposals, sessions and plans)",
                         hint="name it otherwise, or leave it out (then it is derived)")
    why = reserved_run(run_id)  # nor one of the runtime's own (tests/security/test_94)
    if why is not None:
        raise InputError(f"`{run_id}`: {why}",
                         hint="name it otherwise, or leave it out (then it is derived)")
    return run_id


def start(engine: Engine, path: Path, inputs: Mapping[str, Any], *,
          run_id: str | None = None, by: str | None = None,
          waiting: WaitingCap | None = None) -> dict[str, Any]:
    """Start a run of the workflow file ``path``; ``by``: who asked (recorded: they never
    answer its human steps); ``waiting``: see :meth:`.engine.Engine.start`."""
    return outcome(engine.start(load_file(path), inputs,
                                run_id=check_run_id(run_id) if run_id else None,
                                started_by=by, waiting=waiting))


def resume(engine: Engine, run_id: str) -> dict[str, Any]:
    return outcome(engine.advance(run_id))


def is_workflow_run(rt: Runtime, run_id: str) -> bool:
    # one row fetched (not a batch of the run's events): the run's first event says it
    first = next(iter(rt.journal.events(run_id=run_id, batch=1)), None)
    return first is not None and first.kind == "workflow.started"




def after_approval(rt: Runtime, run_id: str, *, base_url: str | None = None,
                   api_key: str | None = None) -> dict[str, Any] | None:
    """An approval of a workflow's tool step was decided: walk the run on from there.

    INVARIANT: the decision is journaled before this runs, so a refusal of the walk (the
    workflow's file changed since the run started, ...) is said beside the decision —
    ``status: not_continued`` and the error —, never in its place: before, the person was
    answered an error for a decision that stood (``tests/security/test_168``)."""
    if not is_workflow_run(rt, run_id):
        return None
    try:
        return resume(open_engine(rt, base_url=base_url, api_key=api_key), run_id)
    except CradleError as exc:
        return {"run_id": run_id, "status": NOT_CONTINUED, "error": exc.to_dict()}


def decision_for(step: HumanStep, answer: str,
                 limits: InputLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """``--answer pay`` (the decision field) or ``--answer '{...}'`` (the whole output)."""
    stripped = answer.strip()
    if stripped.startswith("{"):
        return parse_input(stripped, limits, source="answer")
    if step.answers and answer not in step.answers:
        raise InputError(f"`{answer}` is not an allowed answer of step `{step.id}`",
                         hint="one of " + ", ".join(f"`{a}`" for a in step.answers))
    return {step.decision_field: answer}


def check_step_scope(rt: Runtime, step: HumanStep, *, by: str, run_id: str) -> None:
    """Refuse (:class:`~cradle_kg.errors.ApprovalError`) an approver whose scopes do not
    reach the human ``step`` of ``run_id``: an answer to it, or a cancel of the run waiting
    on it (``tests/security/test_299``)."""
    approver = rt.approvals.approver(by)
    # INVARIANT: a step naming no scope is for an approver holding `*`, as an approval asked
    # within none (before, a limited approver answered it: tests/security/test_181)
    why = (step.scope_refusal(approver.scopes) if approver is not None
           else "they are not an approver of this home")
    if why is not None:
        raise ApprovalError(f"`{by}` may not answer step `{step.id}` of run `{run_id}`: {why}")


def decide(rt: Runtime, engine: Engine, run_id: str, step_id: str, *, by: str, token: str,
           answer: str, note: str | None = None) -> dict[str, Any]:
    """A person's answer to a waiting human step; they authenticate like an approver."""
    # what a person types, checked as a task's close checks it (tests/security/test_600)
    check_human_input(rt.config.input_limits,
                      ids={"run_id": run_id, "step": step_id, "by": by},
                      texts={"answer": answer, "note": note, "token": token})
    rt.approvals.authenticate(by, token)
    for what, text in (("answer", answer), ("note", note or "")):
        if len(text) > MAX_TEXT:
            raise InputError(f"`{what}`: more than {MAX_TEXT} characters")
    wf = engine.workflow(run_id)
    step = wf.step(step_id)
    if not isinstance(step, HumanStep):
        raise InputError(f"step `{step_id}` of run `{run_id}` is a {step.kind} step, "
                         "not a human one")
    # INVARIANT: who may never approve the workflow agent's actions (the agent, the person
    # it acts for) never answers its human steps either: a review is someone else's
    # (before, the agent's principal answered `pay` to its own credit, tests/security/test_67)
    if by in excluded_for_agent(rt.config, wf.agent):
        raise ApprovalError(f"`{by}` is `{wf.agent}` or the one it acts for, and cannot "
                            f"answer step `{step_id}` of its workflow run `{run_id}`")
    # INVARIANT: an approver's scopes bound the human steps they answer as the approvals
    # they decide: a step asked within a scope is answered by who holds it or `*` (before,
    # any approver answered any step: tests/security/test_170)
    # INVARIANT: nor does who asked for the run: a request and its review are two people's
    # (before, an approver started a credit and answered its review: tests/security/test_177)
    if by == engine.started_by(run_id):
        raise ApprovalError(f"`{by}` started workflow run `{run_id}` and cannot answer its "
                            f"step `{step_id}`: a review is someone else's")
    check_step_scope(rt, step, by=by, run_id=run_id)
    return outcome(engine.decide(run_id, step_id,
                                 decision_for(step, answer, rt.config.input_limits), by=by,
                                 note=note))


def status(engine: Engine, run_id: str) -> dict[str, Any]:
    """Where a workflow run stands, read from the journal only.

    A run whose workflow file changed or went since it started is still shown — its steps
    as its ``workflow.started`` recorded them (id and kind) with their states from the
    journal, and ``workflow_error`` saying why the file's own view of them (questions,
    inputs, tools) is not given. It cannot be resumed or answered so; it can be read (before,
    every earlier run's status was an error once its file was edited)."""
    try:
        wf, fold = engine.workflow_of(run_id)
    except UnknownNameError:
        raise
    except InputError as exc:  # the file changed, went or no longer reads: the journal's
        recorded, fold = engine.recorded_fold(run_id)
        assert fold.started is not None
        p = fold.started.payload
        steps = [_step_state(fold, {"id": sid, "kind": kind}, sid, None)
                 for sid, kind in recorded]
        return {**_run_dict(engine, run_id, str(p["workflow"]), str(p["version"]), fold,
                            steps), "workflow_error": exc.to_dict()}
    return _run_dict(engine, run_id, wf.id, wf.version, fold,
                     [_step_state(fold, _step_dict(step), step.id, step) for step in wf.steps])


def _step_state(fold: RunFold, d: dict[str, Any], step_id: str, step: Step | None
                ) -> dict[str, Any]:
    """``d`` with the step's state from the run's fold (``step``: its definition, when the
    workflow file is the one the run started with — for the question a person is asked)."""
    keys = [k for k in (*fold.begun, *fold.completed, *fold.failed, *fold.requested)
            if k[0] == step_id]
    done = [k for k in keys if k in fold.completed]
    failed = [k for k in keys if k in fold.failed]
    asked = [k for k in keys if k in fold.requested and k not in fold.decided]
    cancel = None if fold.finished is None else cancelled_by(fold.finished)
    if done:
        d |= {"state": "completed", "output": fold.completed[done[-1]]}
    elif failed:
        p = fold.failed[failed[-1]]
        d |= {"state": "failed", "code": p["code"], "reason": p["reason"]}
    elif step_id in fold.skipped:
        d["state"] = "skipped"
    elif cancel is not None:  # never done now: not waiting, not running, not to come
        d |= {"state": "cancelled", "reason": f"cancelled by `{cancel[0]}`: {cancel[1]}"}
    elif asked and (step is None or isinstance(step, HumanStep)):
        request = fold.requested[asked[-1]].payload
        question = step.question if isinstance(step, HumanStep) else None
        d |= {"state": "waiting_for_person", "input": request["context"],
              "asked": render(question, request["context"]) if question else "",
              "reasons": request.get("reasons", []),
              "suggestion": request.get("suggestion"), "stage": request.get("stage"),
              "requested_at": fold.requested[asked[-1]].at.isoformat()}
    elif keys:
        d["state"] = "running"
    else:
        d["state"] = "pending"
    return d


def _run_dict(engine: Engine, run_id: str, workflow: str, version: str, fold: RunFold,
              steps: list[dict[str, Any]]) -> dict[str, Any]:
    assert fold.started is not None
    # the run's state and why from the derived tables, not a fold of the run (its agent's
    # proposals included: tests/security/test_91)
    state, why = state_and_why(engine.rt.journal, run_id)
    finished = fold.finished
    return {"run_id": run_id, "workflow": workflow, "version": version,
            "state": state.value, "why": why,
            "input": fold.started.payload["input"], "steps": steps,
            "ended": None if finished is None else {
                "kind": finished.kind, **{k: finished.payload.get(k)
                                          for k in ("step", "code", "reason")}}}
