"""``cradle-kg eval agentdojo``: the lineage rules measured on an AgentDojo suite.

It replays the benchmark's reference calls through the runtime; it runs no model.
Exit codes: 0 the evaluation ran (whatever its figures), 2 error (unknown suite, the
``agentdojo`` extra missing).
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import CradleError
from .common import Format, FormatOpt, console, fail, print_json, table

eval_app = typer.Typer(help="Measure the runtime's rules on public benchmarks.",
                       no_args_is_help=True)
LABEL = "replays the benchmark's reference calls through the runtime; runs no model"


@eval_app.command("agentdojo")
def agentdojo(suite: Annotated[str, typer.Option("--suite", help="banking, slack, travel "
                                                 "or workspace (AgentDojo v1).")],
              fmt: FormatOpt = Format.TABLE) -> None:
    """Utility (user tasks whose reference calls all run unattended) and security (pairs
    where an attacker's write ran unattended) of the lineage rules on one suite."""
    from ..integrations.agentdojo import evaluate_suite
    try:
        report = evaluate_suite(suite)
    except CradleError as exc:
        fail(exc)
    data = report.to_json()
    if fmt is Format.JSON:
        print_json(data)
        return
    console.print(f"AgentDojo v1 `{suite}` — {LABEL}", highlight=False)
    u, s = data["utility"], data["security"]
    console.print(f"utility: {u['passed']}/{u['total']} user tasks unattended", highlight=False)
    console.print(f"security: {s['attacker_writes_executed']}/{s['pairs']} pairs with an "
                  "attacker's write executed unattended", highlight=False)
    if u["failures"]:
        table("utility failures", ["user task", "tool", "status", "reason"],
              [[f["user_task"], c["tool"], c["status"], (c["reasons"] or ["-"])[0]]
               for f in u["failures"] for c in f["calls"]])
    if s["failures"]:
        table("security failures", ["user task", "injection task", "executed"],
              [[f["user_task"], f["injection_task"], ", ".join(f["executed"])]
               for f in s["failures"]])


def install(app: typer.Typer) -> None:
    app.add_typer(eval_app, name="eval")
