"""``cradle-kg tasks``: the human tasks the runtime opened (escalations), and closing them."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import CradleError, InputError
from ..loop.escalation import task_page
from .approvals import AsOpt, TokenOpt
from .common import (
    Format,
    FormatOpt,
    HomeOpt,
    clean,
    console,
    err_console,
    fail,
    print_json,
    table,
)
from .core import open_journal, open_runtime

tasks_app = typer.Typer(help="Human tasks (escalations): list, resolve.", no_args_is_help=True)


@tasks_app.command("list")
def tasks_list(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
               run: Annotated[str | None, typer.Option("--run", help="One run only.")] = None,
               all_: Annotated[bool, typer.Option("--all", help="Resolved ones too.")] = False,
               limit: Annotated[int, typer.Option(
                   min=1, help="How many tasks to show (oldest first).")] = 100,
               offset: Annotated[int, typer.Option(
                   min=0, help="How many of the oldest tasks to skip.")] = 0,
               ) -> None:
    """Open human tasks, oldest first, one page at a time (with --all, resolved ones too)."""
    with open_journal(home) as journal:
        tasks, total = task_page(journal, run_id=run, include_resolved=all_, limit=limit,
                                 offset=offset)
    if fmt is Format.JSON:
        print_json([t.to_dict() for t in tasks])
        return
    table("human tasks", ["id", "run", "code", "about", "reason", "resolved by"],
          [[t.id, t.run_id, t.code, t.subject, t.reason, t.resolved_by or "-"] for t in tasks])
    if offset + len(tasks) < total:
        err_console.print(f"{offset + 1} to {offset + len(tasks)} of {total} tasks; "
                          f"more with --offset {offset + len(tasks)}", highlight=False)


@tasks_app.command("resolve")
def tasks_resolve(task_id: str, approver: AsOpt,
                  note: Annotated[str, typer.Option("--note", help="What was done.")],
                  home: HomeOpt = None, token: TokenOpt = None) -> None:
    """Close a human task, saying what was done; the approver authenticates with a token."""
    if not token:
        fail(InputError("an approver token is required",
                        hint="pass --token or set CRADLE_APPROVER_TOKEN"))
    with open_runtime(home) as rt:
        try:
            task = rt.resolve_task(task_id, by=approver, token=token, note=note)
        except CradleError as exc:
            fail(exc, code=1 if exc.code == "approval_error" else 2)
    console.print(f"task {clean(task.id)}: resolved by {clean(task.resolved_by)}",
                  highlight=False)


def install(app: typer.Typer) -> None:
    app.add_typer(tasks_app, name="tasks")
