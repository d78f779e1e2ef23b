"""``cradle-kg workflow list|validate|run|status|resume|cancel`` and ``cradle-kg step decide``.

Exit codes: 0 done (a run that completed, or that waits for a person — `status` says
which); 1 a negative result (a file that does not validate, a run that failed, a person
whose token is refused); 2 the input could not be read or the command could not be
carried out (no such file or run, a step that does not wait, an answer not allowed, a run
that ended — cancelled too).

A model step calls the OpenAI-compatible server given by ``--base-url`` (or
``$CRADLE_MODEL_BASE_URL``); with none configured it fails closed (``model_unavailable``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..config import load_config
from ..errors import ApprovalError, CradleError, InputError, WorkflowFileError
from ..home import Home, resolve_home
from ..workflow import runner
from ..workflow.cancel import cancel
from ..workflow.definitions import load_file
from .approvals import TokenOpt, check_person
from .common import Format, FormatOpt, HomeOpt, clean, console, fail, print_json, table
from .core import open_runtime

if TYPE_CHECKING:
    from ..loop.runtime import Runtime

workflow_app = typer.Typer(help="Workflows written as YAML files: list, validate, run, "
                                "status, resume, cancel.", no_args_is_help=True)
step_app = typer.Typer(help="Human workflow steps: decide.", no_args_is_help=True)

BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", envvar="CRADLE_MODEL_BASE_URL",
    help="OpenAI-compatible model server, e.g. http://127.0.0.1:8000/v1 (none: model steps "
         "fail closed).", show_default=False)]
ApiKeyOpt = Annotated[str | None, typer.Option("--api-key", envvar="CRADLE_MODEL_API_KEY",
                                               hidden=True)]


@workflow_app.command("list")
def workflow_list(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE) -> None:
    """The workflow files of the home (``HOME/workflows/*.yaml``), each checked."""
    found = runner.list_definitions(resolve_home(home))
    if fmt is Format.JSON:
        print_json(found)
        return
    table("workflows", ["id", "version", "steps", "valid", "file"],
          [[w["id"], w.get("version", "-"),
            " → ".join(f"{s['id']} ({s['kind']})" for s in w.get("steps", [])) or "-",
            "yes" if w["valid"] else w["problems"][0], w["file"]] for w in found])


@workflow_app.command("validate")
def workflow_validate(file: Annotated[Path, typer.Argument(help="A workflow YAML file.")],
                      fmt: FormatOpt = Format.TABLE, home: HomeOpt = None) -> None:
    """Check a workflow file; every problem is printed as ``FILE:LINE: message`` (exit 1).

    A file means the same in every home; ``--home`` is accepted like everywhere else."""
    try:
        wf = load_file(file)
    except WorkflowFileError as exc:
        if fmt is Format.JSON:
            print_json({"valid": False, "file": str(file), "problems": list(exc.problems)})
        else:
            for problem in exc.problems:
                console.print(clean(problem), highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except CradleError as exc:
        fail(exc)
    if fmt is Format.JSON:
        print_json({"valid": True, "file": str(file), "workflow": runner.describe(wf)})
        return
    console.print(f"{clean(file)}: workflow `{clean(wf.id)}` version {clean(wf.version)}, "
                  f"{len(wf.steps)} step(s): "
                  + ", ".join(f"{clean(s.id)} ({s.kind})" for s in wf.steps), highlight=False)


def _print_outcome(out: dict[str, Any], fmt: Format) -> None:
    if fmt is Format.JSON:
        print_json(out)
    else:
        line = f"run {clean(out['run_id'])} ({clean(out['workflow'])}): {clean(out['status'])}"
        if out.get("step"):
            line += f" at step {clean(out['step'])}"
        if out.get("reason"):
            line += f": {clean(out['code'])}: {clean(out['reason'])}"
        console.print(line, highlight=False, soft_wrap=True)
    raise typer.Exit(1 if out["status"] == "failed" else 0)


@workflow_app.command("run")
def workflow_run(
    file: Annotated[str, typer.Argument(help="A workflow file, or the name of one in "
                                             "HOME/workflows.")],
    input_json: Annotated[str, typer.Option("--input", help="The workflow input, a JSON "
                                                           "object.")],
    run_id: Annotated[str | None, typer.Option(
        "--run", help="The run's id (default: derived from the workflow, input and time; "
        "not beginning with `run:`, the runs of proposals, sessions and plans).",
        show_default=False)] = None,
    home: HomeOpt = None, fmt: FormatOpt = Format.TABLE, base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    starter: Annotated[str | None, typer.Option(
        "--as", help="The approver starting the run (with their token): recorded, they "
        "never review it. Default: the approver of --token / $CRADLE_APPROVER_TOKEN, if "
        "given.", show_default=False)] = None,
    token: TokenOpt = None,
) -> None:
    """Start a run: its steps go as far as they can (a human step waits, holding nothing).
    Started by a person (their token given), the run records them (``started_by``)."""
    try:
        path = runner.find_definition(resolve_home(home), file)
        limits = load_config(Home(resolve_home(home)).config).input_limits
        inputs = runner.parse_input(input_json, limits)
        load_file(path)
        if run_id is not None:
            runner.check_run_id(run_id)
    except CradleError as exc:
        fail(exc)
    with open_runtime(home) as rt:
        # INVARIANT: a run started by a known person records them, as over the JSON API,
        # and they never answer its steps, approve its actions or close its tasks
        # (before, a run started here recorded no one: tests/security/test_197)
        by = _starter(rt, starter, token)
        try:
            out = runner.start(runner.open_engine(rt, base_url=base_url, api_key=api_key),
                               path, inputs, run_id=run_id, by=by)
        except CradleError as exc:
            fail(exc)
    _print_outcome(out, fmt)


def _starter(rt: Runtime, by: str | None, token: str | None) -> str | None:
    """Who starts a run from the command line: ``--as`` an approver with their token
    (:func:`~.approvals.check_person`), else the approver the token given authenticates
    (one refused: exit 1), else no one — the operator's run, as before."""
    if by is not None:
        if rt.config.approver(by) is None:
            fail(InputError(f"`--as {by}`: not an approver of this home",
                            hint="the person starting the run, one of the home's approvers"))
        check_person(rt, by, token)
        return by
    if not token:
        return None
    holder = rt.approvals.token_holder(token)
    if holder is None:
        fail(ApprovalError("the token given (--token or CRADLE_APPROVER_TOKEN) authenticates "
                           "no approver of this home", hint="unset it to start the run as "
                           "the operator, or pass the right one"), code=1)
    return holder


@workflow_app.command("status")
def workflow_status(run_id: str, home: HomeOpt = None, fmt: FormatOpt = Format.TABLE) -> None:
    """Where a run stands: its state, why, and each step (read only)."""
    with open_runtime(home, reading=True) as rt:
        try:
            st = runner.status(runner.open_engine(rt), run_id)
        except CradleError as exc:
            fail(exc)
    if fmt is Format.JSON:
        print_json(st)
        return
    console.print(f"run {clean(run_id)} ({clean(st['workflow'])} v{clean(st['version'])}): "
                  f"{st['state']}", highlight=False)
    for why in st["why"]:
        console.print(f"  why: {clean(why)}", highlight=False, soft_wrap=True)
    if "workflow_error" in st:  # the run's file changed or went: its steps as recorded
        console.print(f"  note: {clean(st['workflow_error']['message'])}: its steps as the "
                      "run recorded them, without their questions", highlight=False,
                      soft_wrap=True)
    rows = []
    for s in st["steps"]:
        detail = s.get("asked") or s.get("reason") or ""
        if s.get("answers") and s["state"] == "waiting_for_person":
            detail += "  answers: " + ", ".join(s["answers"])
        rows.append([s["id"], s["kind"], s["state"], detail])
    table("steps", ["step", "kind", "state", "detail"], rows)


@workflow_app.command("resume")
def workflow_resume(run_id: str, home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
                    base_url: BaseUrlOpt = None, api_key: ApiKeyOpt = None) -> None:
    """Continue a run from the journal (after an approval, or a model server came back)."""
    with open_runtime(home) as rt:
        try:
            out = runner.resume(runner.open_engine(rt, base_url=base_url, api_key=api_key),
                                run_id)
        except CradleError as exc:
            fail(exc)
    _print_outcome(out, fmt)


@workflow_app.command("cancel")
def workflow_cancel(
    run_id: str,
    by: Annotated[str, typer.Option("--as", help="Who ends the run (an approver; needs their "
                                                 "token).")],
    reason: Annotated[str, typer.Option("--reason", help="Why (journaled).")],
    home: HomeOpt = None, token: TokenOpt = None, fmt: FormatOpt = Format.TABLE,
) -> None:
    """End a workflow run that has not ended: it no longer counts against its agent's
    ``waiting_per_agent``, its open steps leave the inbox, the approvals it waits on are
    rejected, and it is never answered or resumed again (one journal append)."""
    if not token:
        fail(InputError("an approver token is required",
                         hint="pass --token or set CRADLE_APPROVER_TOKEN"), code=1)
    with open_runtime(home) as rt:
        try:
            out = cancel(rt, runner.open_engine(rt), run_id, by=by, token=token,
                         reason=reason)
        except ApprovalError as exc:
            fail(exc, code=1)
        except CradleError as exc:
            fail(exc)
    if fmt is Format.JSON:
        print_json(out)
        return
    line = f"run {clean(run_id)} ({clean(out['workflow'])}): cancelled by {clean(by)}"
    for what, key in (("rejected approval(s)", "rejected_approvals"),
                      ("closed step(s)", "closed_steps")):
        if out[key]:
            line += f"; {what}: " + ", ".join(clean(x) for x in out[key])
    console.print(line, highlight=False, soft_wrap=True)


@step_app.command("decide")
def step_decide(
    run_id: str, step: str,
    by: Annotated[str, typer.Option("--as", help="Who answers (an approver; needs their "
                                                 "token).")],
    answer: Annotated[str, typer.Option("--answer", help="One of the step's answers (or the "
                                                         "whole output as a JSON object).")],
    note: Annotated[str | None, typer.Option("--note", help="Why (journaled).")] = None,
    home: HomeOpt = None, token: TokenOpt = None, fmt: FormatOpt = Format.TABLE,
    base_url: BaseUrlOpt = None, api_key: ApiKeyOpt = None,
) -> None:
    """Answer a waiting human step; the run continues at once."""
    if not token:
        fail(InputError("an approver token is required",
                         hint="pass --token or set CRADLE_APPROVER_TOKEN"))
    with open_runtime(home) as rt:
        try:
            out = runner.decide(rt, runner.open_engine(rt, base_url=base_url, api_key=api_key),
                                run_id, step, by=by, token=token, answer=answer, note=note)
        except ApprovalError as exc:
            fail(exc, code=1)
        except CradleError as exc:
            fail(exc)
    _print_outcome(out, fmt)


def install(app: typer.Typer) -> None:
    app.add_typer(workflow_app, name="workflow")
    app.add_typer(step_app, name="step")
