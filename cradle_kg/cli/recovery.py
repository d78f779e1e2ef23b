"""``cradle-kg recover``: reconcile dangling intents now, and say what was done.

Exit codes: 0 every dangling intent was resolved or turned into a human task; 1 some are
left (in flight in a live process, or their tool is not registered); 2 error.
"""

from __future__ import annotations

import typer

from ..errors import CradleError
from ..home import resolve_home
from ..loop.runtime import open_home
from .common import Format, FormatOpt, HomeOpt, console, fail, print_json, table


def recover(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE) -> None:
    """Reconcile every intent without its outcome: verify, retry with the same key, or
    open a human task — never a blind replay."""
    try:
        with open_home(resolve_home(home), recover=False) as rt:
            report = rt.recover()
    except CradleError as exc:
        fail(exc)
    if fmt is Format.JSON:
        print_json(report.to_dict())
    else:
        table("recovery", ["action", "run", "tool", "result", "outcome", "detail"],
              [[i.action_id, i.run_id, i.tool, i.result, i.outcome or "-", i.detail]
               for i in report.items])
        summary = ", ".join(f"{k} {v}" for k, v in report.to_dict()["summary"].items() if v)
        console.print(f"{report.dangling} dangling intent(s)" +
                      (f": {summary}" if summary else ""), highlight=False)
    raise typer.Exit(1 if report.unresolved else 0)


def install(app: typer.Typer) -> None:
    app.command()(recover)
