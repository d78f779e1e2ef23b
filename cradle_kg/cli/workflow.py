"""``cradle-kg replay``, ``cradle-kg autonomy ...`` and ``cradle-kg budgets ...``.

Exit codes: 0 done (strict replay reproduced every run; a live replay changed nothing);
1 a negative result (a divergence, a live replay with changes, a refused promotion);
2 the input could not be read or the command could not be carried out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..errors import ApprovalError, CradleError, InputError, ReplayDivergenceError
from ..home import resolve_home
from ..storage import Anchor
from ..workflow.autonomy import AutonomyBook
from ..workflow.budgets import BUDGETS_SCOPE, LEVELS, Budget, BudgetBook, Level, Scope
from ..workflow.difference import LiveSettings, live_replay, render
from ..workflow.errors import AutonomyError
from ..workflow.model import OpenAICompatibleClient
from ..workflow.replay import Source, StrictReport, strict_replay
from ..workflow.runner import list_definitions
from .approvals import TokenOpt, check_approver
from .common import Format, FormatOpt, HomeOpt, clean, console, fail, print_json, table
from .core import AnchorOpt, open_runtime

if TYPE_CHECKING:
    from ..loop.runtime import Runtime

autonomy_app = typer.Typer(help="Progressive autonomy of human steps.", no_args_is_help=True)
budgets_app = typer.Typer(help="Spending limits: tenant, workflow, invocation.",
                          no_args_is_help=True)

AsOpt = Annotated[str, typer.Option(
    "--as", help="The approver who gives the command (journaled; with their token).")]
Wf = Annotated[str, typer.Argument(help="Workflow id.")]
StepArg = Annotated[str, typer.Argument(help="Human step id.")]
#: the longest budget subject (a tenant, workflow or run id: the ids' default length)
MAX_SUBJECT = 256


def replay(
    runs: Annotated[list[str] | None, typer.Argument(help="Run ids (default: every run).")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Reproduce exactly.")] = False,
    live: Annotated[bool, typer.Option("--live", help="Re-run with real calls.")] = False,
    model: Annotated[str | None, typer.Option("--model", help="Model id for --live.")] = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", envvar="CRADLE_MODEL_BASE_URL",
        help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1.")] = None,
    api_key: Annotated[str | None, typer.Option(envvar="CRADLE_MODEL_API_KEY",
                                                 hidden=True)] = None,
    policies: Annotated[Path | None, typer.Option("--policies",
                                                  help="A new policy folder.")] = None,
    pack: Annotated[list[str] | None, typer.Option("--pack", help="PACK@VERSION.")] = None,
    anchor: AnchorOpt = None,
    home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
) -> None:
    """Replay runs in a scratch home: --strict (exact, hash for hash) or --live (a report).

    With ``--anchor`` (a head kept elsewhere, from ``audit anchor``) a strict replay also
    proves the journal is the one anchored: one that does not contain it (cut at its tail,
    re-chained, replaced) is refused, exit 1."""
    if strict == live:
        fail(InputError("choose one of --strict or --live"))
    root = resolve_home(home)
    try:
        if strict:
            if model or base_url or policies or pack:
                raise InputError("--model, --policies and --pack only apply to --live")
            report = strict_replay(root, runs or [],
                                   anchor=Anchor.parse(anchor) if anchor is not None else None)
            _strict_out(report, fmt)
            return
        if anchor is not None:
            raise InputError("--anchor only applies to --strict",
                             hint="`cradle-kg audit verify --anchor` checks any journal")
        client = OpenAICompatibleClient(base_url, api_key=api_key) if base_url else None
        if model and client is None:
            raise InputError("--model needs a model server",
                             hint="pass --base-url or set CRADLE_MODEL_BASE_URL")
        live_report = live_replay(root, runs or [], LiveSettings(
            client=client, model=model, policies=policies, packs=pack or ()))
    except ReplayDivergenceError as exc:
        fail(exc, code=1)
    except CradleError as exc:
        fail(exc)
    if fmt is Format.JSON:
        print_json(live_report.to_dict())
    else:
        for line in render(live_report):
            console.print(line, highlight=False, markup=False)
    raise typer.Exit(1 if live_report.changes else 0)


def _strict_out(report: StrictReport, fmt: Format) -> None:
    anchor = str(report.anchor) if report.anchor is not None else None
    if fmt is Format.JSON:
        print_json({"reproduced": True, "runs": report.runs, "events": report.events,
                    "head_hash": report.head_hash, "anchor": anchor,
                    "warnings": report.warnings})
        return
    console.print(f"strict replay reproduced {len(report.runs)} run(s) exactly: "
                  f"{report.events} events, head {report.head_hash}"
                  + (f", contains anchor {anchor}" if anchor else ""), highlight=False,
                  soft_wrap=True)
    for warning in report.warnings:  # e.g. a run whose packs' digests were not recorded
        console.print(f"warning: {warning}", highlight=False, markup=False, soft_wrap=True)


@autonomy_app.command("status")
def autonomy_status(workflow: Annotated[str | None, typer.Argument(
                        help="Workflow id (none: every human step).")] = None,
                    step: Annotated[str | None, typer.Argument(help="Human step id.")] = None,
                    home: HomeOpt = None, fmt: FormatOpt = Format.TABLE) -> None:
    """Stage, sample, rule (readable), reproduction rate and shadow agreement.

    With no arguments: every human step the home knows (from its workflow files and its
    journal), one line each."""
    if workflow is not None and step is None:
        fail(InputError("give a workflow and a step, or neither"))
    with open_runtime(home, reading=True) as rt:
        book = AutonomyBook(rt.journal, rt.approvals, append=rt.context.append, clock=rt.clock)
        if workflow is None or step is None:
            rows = [_autonomy_row(book, w, s) for w, s in human_steps(rt)]
            if fmt is Format.JSON:
                print_json(rows)
                return
            table("human steps", ["workflow", "step", "stage", "sample", "reproduction",
                                  "agreement"],
                  [[r["workflow"], r["step"], r["stage"], f"{r['decisions']}/{r['min_sample']}",
                    "-" if r["reproduction_rate"] is None else f"{r['reproduction_rate']:.0%}",
                    f"{r['shadow']['agreed']}/{r['shadow']['fresh']}"] for r in rows])
            return
        out = _autonomy_row(book, workflow, step)
        st = book.state(workflow, step)
    if fmt is Format.JSON:
        print_json(out)
        return
    for key, value in out.items():
        if key != "rule":
            console.print(f"{key}: {value}", highlight=False, markup=False)
    if st.rule:
        console.print(st.rule.render(), highlight=False, markup=False)


def _autonomy_row(book: AutonomyBook, workflow: str, step: str) -> dict[str, Any]:
    st = book.state(workflow, step)
    fresh, agreed = book.agreement(st)
    return {"workflow": workflow, "step": step, "stage": str(st.stage),
            "decisions": len(book.history(workflow, step)),
            "min_sample": st.policy.min_sample, "policy": st.policy.model_dump(),
            "rule_version": st.rule.version if st.rule else None,
            "rule": st.rule.render() if st.rule else None,
            "reproduction_rate": st.proposal.get("reproduction_rate"),
            "mismatches": len(st.proposal.get("mismatches", [])),
            "shadow": {"fresh": fresh, "agreed": agreed}, "halted": st.halted}


def human_steps(rt: Runtime) -> list[tuple[str, str]]:
    """Every (workflow, human step) of the home's workflow files and of its journal."""
    found: dict[tuple[str, str], None] = {}
    for w in list_definitions(rt.home.root):
        for s in w.get("steps", []):
            if s["kind"] == "human":
                found[(w["id"], s["id"])] = None
    for kind in ("human.requested", "human.decided", "autonomy.policy"):
        for e in rt.journal.events_of_kind(kind):
            if kind == "autonomy.policy":
                wf, _, st = e.run_id.removeprefix("autonomy:").partition("/")
                found[(wf, st)] = None
            else:
                found[(str(e.payload.get("workflow")), str(e.payload.get("step")))] = None
    return sorted(found)


@autonomy_app.command("propose")
def autonomy_propose(workflow: Wf, step: StepArg, by: AsOpt, home: HomeOpt = None,
                     token: TokenOpt = None) -> None:
    """Learn a rule from the human decisions (nothing below the minimum sample)."""
    with open_runtime(home) as rt:
        check_approver(rt, by, token)
        book = AutonomyBook(rt.journal, rt.approvals, append=rt.context.append, clock=rt.clock)
        proposal = book.propose(workflow, step, by=by)
        if proposal is None:
            st = book.state(workflow, step)
            n = len(book.history(workflow, step))
            console.print(f"observation: {n} decision(s), {st.policy.min_sample} needed; "
                          "nothing proposed", highlight=False)
            raise typer.Exit(1)
    console.print(proposal["readable"], highlight=False, markup=False)
    console.print(f"reproduces {proposal['reproduction_rate']:.1%} of "
                  f"{proposal['sample_size']} decisions; "
                  f"{len(proposal['mismatches'])} mismatch(es)", highlight=False)


@autonomy_app.command("shadow")
def autonomy_shadow(workflow: Wf, step: StepArg, by: AsOpt, home: HomeOpt = None,
                    token: TokenOpt = None) -> None:
    """Show the rule's answer on each request; measure agreement on fresh decisions."""
    _command(home, (by, token), lambda b: b.shadow(workflow, step, by=by),
             f"{workflow}/{step}: shadow")


@autonomy_app.command("promote")
def autonomy_promote(workflow: Wf, step: StepArg, admin: AsOpt, home: HomeOpt = None,
                     token: TokenOpt = None) -> None:
    """Promote the rule, if the step's policy allows it and a named admin who may answer
    the step approves."""
    _command(home, (admin, token),
             lambda b: b.promote(workflow, step, admin=admin, token=token or ""),
             f"{workflow}/{step}: promoted by {admin}")


@autonomy_app.command("halt")
def autonomy_halt(workflow: Wf, step: StepArg, by: AsOpt,
                  reason: Annotated[str, typer.Option("--reason")], home: HomeOpt = None,
                  token: TokenOpt = None) -> None:
    """Kill switch: the step is blocking again at once (any approver, with their token)."""
    _command(home, (by, token), lambda b: b.halt(workflow, step, by=by, reason=reason),
             f"{workflow}/{step}: halted")


def _command(home: Path | None, person: tuple[str, str | None],
             action: Callable[[AutonomyBook], object], done: str) -> None:
    """``action`` on the home's autonomy book, given by ``person`` (``--as``, its token):
    an approver of the home, proved (:func:`~.approvals.check_approver`), or nothing."""
    with open_runtime(home) as rt:
        check_approver(rt, *person)
        book = AutonomyBook(rt.journal, rt.approvals, append=rt.context.append, clock=rt.clock)
        try:
            action(book)
        except AutonomyError as exc:
            fail(exc, code=1)
        except CradleError as exc:
            fail(exc, code=1 if exc.code == "approval_error" else 2)
    console.print(clean(done), highlight=False)  # names quoted as they are (test_79)


@budgets_app.command("set")
def budgets_set(level: Annotated[str, typer.Option("--level", help="tenant|workflow|invocation")],
                limit: Annotated[float, typer.Option("--limit")], by: AsOpt,
                subject: Annotated[str, typer.Option("--subject")] = "*",
                home: HomeOpt = None, token: TokenOpt = None) -> None:
    """Set a budget (journaled); the latest one per level and subject is in force. Given
    by an approver holding the scope ``budgets`` (or ``*``), with their token."""
    if level not in LEVELS:
        fail(InputError(f"unknown level `{level}`", hint="tenant, workflow or invocation"))
    lvl: Level = level
    # INVARIANT: refused in one line, nothing journaled: a limit no journal holds (NaN,
    # infinite, negative) and a subject no id of the home is (tests/security/test_325)
    if not math.isfinite(limit) or limit < 0:
        fail(InputError(f"`--limit`: `{limit}` is not a finite number of 0 or more"))
    if not subject or len(subject) > MAX_SUBJECT or not subject.isprintable():
        fail(InputError(f"`--subject`: an id of 1 to {MAX_SUBJECT} printable characters, "
                        f"not `{clean(subject[:60])}`"))
    with open_runtime(home) as rt:
        check_approver(rt, by, token)
        _check_budget_setter(rt, by)
        book = BudgetBook(rt.journal)
        rt.context.append([book.set_event(Budget(level=lvl, subject=subject, limit=limit), by=by,
                                   now=rt.clock())])
    console.print(f"budget {clean(level)}:{clean(subject)} = {limit:g}", highlight=False)


def _check_budget_setter(rt: Runtime, by: str) -> None:
    """A budget bounds what every run of a tenant or workflow may spend: set by an approver
    whose scopes hold ``budgets`` or ``*`` — one limited to other scopes decides within
    those, not the home's spending (``tests/security/test_337``)."""
    approver = rt.config.approver(by)
    scopes = approver.scopes if approver is not None else ()
    if "*" not in scopes and BUDGETS_SCOPE not in scopes:
        fail(ApprovalError(f"`{by}` may not set budgets: they hold the scopes "
                           + (", ".join(f"`{x}`" for x in scopes) or "(none)"),
                           hint=f"an approver holding the scope `{BUDGETS_SCOPE}` or `*`"),
             code=1)


@budgets_app.command("status")
def budgets_status(tenant: Annotated[str | None, typer.Option("--tenant")] = None,
                   workflow: Annotated[str, typer.Option("--workflow")] = "",
                   run: Annotated[str, typer.Option("--run")] = "",
                   home: HomeOpt = None, fmt: FormatOpt = Format.TABLE) -> None:
    """Spend against every budget that applies to a tenant / workflow / run.

    With no option: every budget in force, its use and its state (`ok`, `alert` past its
    alert ratio, `exhausted`); a budget on `*` shows the subject that spent the most."""
    with open_runtime(home, reading=True) as rt:
        book = BudgetBook(rt.journal)
        if tenant is None and not workflow and not run:
            rows = every_budget(book)
        else:
            rows = [_row(s.budget, s.subject, s.spent)
                    for s in book.standings(Scope(tenant or "default", workflow, run))]
    if fmt is Format.JSON:
        print_json(rows)
        return
    table("budgets", ["level", "subject", "spent", "limit", "used", "state"],
          [[r["level"], r["subject"], f"{r['spent']:g}", f"{r['limit']:g}", r["used"],
            r["state"]] for r in rows])


def _row(budget: Budget, subject: str, spent: float) -> dict[str, Any]:
    state = ("exhausted" if spent >= budget.limit else
             "alert" if spent >= budget.alert_ratio * budget.limit else "ok")
    return {"level": budget.level, "budget_subject": budget.subject, "subject": subject,
            "spent": spent, "limit": budget.limit,
            "used": f"{spent / budget.limit:.0%}" if budget.limit else "-", "state": state}


def every_budget(book: BudgetBook) -> list[dict[str, Any]]:
    """Every budget in force and its spend, read from the journal's derived usage buckets
    (a budget on ``*``: the subject that spent the most at its level)."""
    rows = []
    for b in book.budgets():
        if b.subject != "*":
            rows.append(_row(b, b.subject, book.spent(b.level, b.subject)))
            continue
        who, top = book.top(b.level) or ("*", 0.0)
        rows.append(_row(b, who, top))
    return rows


@budgets_app.command("tasks")
def budgets_tasks(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE) -> None:
    """Human tasks opened by budget refusals."""
    with Source.open(resolve_home(home)) as source:
        rows = [{"run_id": e.run_id, "task_id": e.subject, "step": e.payload.get("step"),
                 "code": e.payload.get("code"), "message": e.payload.get("message"),
                 "action": e.payload.get("action")}
                for e in source.events if e.kind == "task.opened"]
    if fmt is Format.JSON:  # as every listing (tests/security/test_579)
        print_json(rows)
        return
    table("budget tasks", ["run", "step", "code", "message"],
          [[r["run_id"], r["step"], r["code"], r["message"]] for r in rows])


def install(app: typer.Typer) -> None:
    app.command()(replay)
    app.add_typer(autonomy_app, name="autonomy")
    app.add_typer(budgets_app, name="budgets")
