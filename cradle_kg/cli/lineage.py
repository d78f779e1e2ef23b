"""Lineage from the shell: ``cradle-kg input`` records a run's trusted input (the person's
request, with its author); ``cradle-kg eval agentdojo`` measures the lineage rules on an
AgentDojo suite — it replays the benchmark's reference calls; it runs no model.

Exit codes: 0 done (``eval``: the evaluation ran, whatever its figures), 2 error (unknown
suite, version or attack, an attack a replay cannot build, the ``agentdojo`` extra missing,
an empty input, no author).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..config import load_config
from ..errors import CradleError, InputError
from ..home import Home, resolve_home
from .approvals import TokenOpt, check_person
from .common import Format, FormatOpt, HomeOpt, clean, console, fail, print_json, read_input, table

eval_app = typer.Typer(help="Measure the runtime's rules on public benchmarks.",
                       no_args_is_help=True)
LABEL = "replays the benchmark's reference calls through the runtime; runs no model"


@eval_app.command("agentdojo")
def agentdojo(suite: Annotated[str, typer.Option("--suite", help="banking, slack, travel "
                                                 "or workspace.")],
              version: Annotated[str, typer.Option(
                  "--version", help="The AgentDojo benchmark version (v1, v1.1, ..., "
                  "v1.2.2: those the installed package has).")] = "v1",
              attack: Annotated[str, typer.Option(
                  "--attack", help="The attack text placed in the injection vectors: one "
                  "of AgentDojo's fixed templates (important_instructions, tool_knowledge, "
                  "direct, ignore_previous, system_message, injecagent, ...).")
              ] = "important_instructions",
              home: Annotated[Path | None, typer.Option(
                  "--home", help="A new folder to keep the evaluation's home in "
                  "(default: a temporary one).")] = None,
              fmt: FormatOpt = Format.TABLE) -> None:
    """Utility (user tasks whose reference calls all run unattended) and security (pairs
    where an attacker's write ran unattended) of the lineage rules on one suite."""
    from ..integrations.agentdojo import evaluate_suite
    try:
        report = evaluate_suite(suite, home=home, version=version, attack=attack)
    except CradleError as exc:
        fail(exc)
    data = report.to_json()
    if fmt is Format.JSON:
        print_json(data)
        return
    console.print(f"AgentDojo {clean(version)} `{clean(suite)}`, attack `{clean(attack)}` — "
                  f"{LABEL}", highlight=False)
    u, s = data["utility"], data["security"]
    console.print(f"utility: {u['passed']}/{u['total']} user tasks unattended", highlight=False)
    console.print(f"security: {s['attacker_writes_executed']}/{s['pairs']} pairs with an "
                  "attacker's write executed unattended", highlight=False)
    if none := s.get("injection_tasks_without_reference_calls"):
        console.print(f"{len(none)} injection task(s) without reference calls (their pairs "
                      f"measure nothing): {clean(', '.join(none))}", highlight=False)
    if u["failures"]:
        table("utility failures", ["user task", "tool", "status", "reason"],
              [[f["user_task"], c["tool"], c["status"], (c["reasons"] or ["-"])[0]]
               for f in u["failures"] for c in f["calls"]])
    if s["failures"]:
        table("security failures", ["user task", "injection task", "executed"],
              [[f["user_task"], f["injection_task"], ", ".join(f["executed"])]
               for f in s["failures"]])


def input_(
    run_id: Annotated[str, typer.Argument(help="The run the input belongs to.")],
    text: Annotated[str | None, typer.Option("--text", help="The request, as written.")] = None,
    file: Annotated[str | None, typer.Option("--file", help="Read it from a file, - for "
                                             "stdin.")] = None,
    author: Annotated[str, typer.Option("--as", help="Who wrote it (e.g. user:emma).")] = "",
    kind: Annotated[str, typer.Option("--kind", help="request, instruction, ...")] = "request",
    home: HomeOpt = None, fmt: FormatOpt = Format.TABLE, token: TokenOpt = None,
) -> None:
    """Record a trusted input of a run: a value it contains has a trusted origin for lineage.
    As an approver of the home, with their token (a person's words are evidence)."""
    from .core import home_runtime
    try:
        if (text is None) == (file is None):
            raise InputError("give the input with one of --text or --file")
        if text is None:
            limits = load_config(Home(resolve_home(home)).config).input_limits
            text = read_input(str(file), limits.max_bytes).decode("utf-8")
        with home_runtime(resolve_home(home)) as rt:
            # INVARIANT: an input under a person's name is theirs only with their token, as
            # their upload is (before, `--as user:bob` alone: tests/security/test_195)
            check_person(rt, author, token)
            # INVARIANT: nor is an agent of the home the author of a run's trusted input:
            # lineage would read its words as the run's request (tests/security/test_203)
            if rt.config.agent(author) is not None:
                fail(InputError(f"`--as {author}`: an agent of the home; a run's input is a "
                                "person's words (an approver with their token, or the user "
                                "the host speaks for), not an agent's",
                                hint="an agent's document is uploaded as its own: "
                                     "`POST /api/evidence` with its token"), code=1)
            ref = rt.record_input(run_id, text, author=author, kind=kind)
    except (CradleError, UnicodeDecodeError) as exc:
        fail(exc if isinstance(exc, CradleError) else InputError(f"the input is not UTF-8: {exc}"))
    if fmt is Format.JSON:
        print_json({"run_id": run_id, "ref": ref, "author": author, "kind": kind})
    else:
        console.print(f"recorded `{ref}` in `{clean(run_id)}` from `{clean(author)}`",
                      highlight=False)  # names chosen by others (tests/security/test_79)


def install(app: typer.Typer) -> None:
    app.add_typer(eval_app, name="eval")
    app.command("input")(input_)
