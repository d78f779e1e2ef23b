"""``budgets tasks`` takes ``--format json``, as every listing does.

Finding (the twenty-sixth review, the README walked as an SRE): "every listing takes
``--format json``" — but ``cradle-kg budgets tasks --format json`` was refused by the
option parser (``No such option: --format``, exit 2): the one listing a script watching
budget refusals could not read but as a drawn table.

Now it takes ``--format json`` (a list of ``{run_id, task_id, step, code, message, action}``),
the table stays the default. A real home whose journal holds a budget refusal's task, as
the workflow engine writes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cradle_kg import Runtime
from cradle_kg.cli import app
from cradle_kg.storage import NewEvent

pytestmark = pytest.mark.usefixtures("journal_backend")


def test_budget_tasks_as_json(home: Path) -> None:
    with Runtime(home, graph_sync=False) as rt:
        rt.journal.append([NewEvent(
            run_id="wf-1", kind="task.opened", subject="task:wf-1/draft",
            actor="cradle-kg/runtime", at=rt.clock(),
            payload={"step": "draft", "code": "budget_exceeded",
                     "message": "tenant `acme` is at 100 % of its budget",
                     "action": "raise the budget or cancel the run"})])
    out = CliRunner().invoke(app, ["budgets", "tasks", "--format", "json", "--home", str(home)])
    # before: exit 2, "No such option: --format"
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout) == [{
        "run_id": "wf-1", "task_id": "task:wf-1/draft", "step": "draft",
        "code": "budget_exceeded", "message": "tenant `acme` is at 100 % of its budget",
        "action": "raise the budget or cancel the run"}]
    table = CliRunner().invoke(app, ["budgets", "tasks", "--home", str(home)])
    assert table.exit_code == 0 and "budget_exceeded" in table.output, table.output
