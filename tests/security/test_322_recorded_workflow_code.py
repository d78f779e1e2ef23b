"""A journal does not choose the code a reading command runs.

Finding (twentieth attack review): a workflow run records the workflow it runs in its
``workflow.started`` — a file (``file:PATH#HASH``) or, for a workflow written in Python,
the ``module:function`` that builds it — and every reader of the run builds the workflow
again from that record: ``workflow status``, ``replay``, the inbox's human steps, the JSON
API's run views. ``load_workflow`` imported whatever module the record named and called
whatever attribute, with no argument. The README tells an auditor handed a home to "copy
only ``journal.sqlite`` and ``evidence/`` into a home of your own" — yet the journal alone
chose the code: a ``workflow.started`` of the author's naming ``os:abort`` killed
``workflow status`` and ``replay --strict`` (SIGABRT, a core dump), ``this:x`` printed the
Zen of Python (an import's side effect), ``signal:pause`` held the command for ever, and a
function of any module on the path ran (here, one that leaves a mark).

Now a recorded ``module:function`` is built only from a module this process has loaded
already (the host that defined the workflow, a pack the home enables, cradle-kg's own)
and only through a workflow factory: a plain function of that module, taking no
argument, annotated to return a ``Workflow``. Anything else is refused, nothing imported
or called: ``replay`` in one ``error:`` line (exit 2), ``workflow status`` shows the run
as it recorded itself with the reason, as for a workflow file that changed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import AGENT
from tests.security.handed import append_forged, handed_home
from tests.security.inputcli import assert_refused, cli

pytestmark = pytest.mark.sqlite_only("the author writes the handed SQLite file")

MARK = "CRADLE_TEST_322_MARK"
RUN = "wf-forged"


def planted() -> None:
    """What the author wants run on the auditor's machine (here: a mark)."""
    Path(os.environ[MARK]).write_text("ran", encoding="utf-8")


def _forged_home(factory: pytest.TempPathFactory, definition: str,
                 workflow: str = "w") -> Path:
    home = handed_home(factory, "t322")
    append_forged(home / "journal.sqlite", kind="workflow.started", run_id=RUN,
                  subject=f"workflow:{workflow}@1", actor=AGENT, payload=json.dumps({
                      "workflow": workflow, "version": "1", "definition": definition,
                      "input": {}, "input_hash": "sha256:" + "0" * 64, "agent": AGENT,
                      "tenant": "default", "packages": {}, "steps": []}))
    return home


@pytest.mark.parametrize("definition", ["os:abort", "this:x", f"{__name__}:planted",
                                        "cradle_kg.__main__:entry"])
@pytest.mark.parametrize("command", [("workflow", "status", RUN), ("replay", RUN, "--strict")],
                         ids=lambda c: c[0])
def test_a_recorded_definition_runs_no_code_of_the_authors_choosing(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, definition: str,
        command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    from cradle_kg.storage.opening import JOURNAL_URL_ENV

    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = _forged_home(tmp_path_factory, definition)
    mark = tmp_path / "mark"
    done = cli(*command, "--home", str(home), env={MARK: str(mark)}, timeout=120)
    # before: SIGABRT, the Zen of Python on stdout, the mark written, the CLI run again
    said = f"workflow definition `{definition}`"
    if command[0] == "replay":
        assert_refused(done, said)
    else:  # the run as it recorded itself, with why its workflow was not built
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
        assert said in " ".join(done.stdout.split()), done.stdout
    assert "Zen of Python" not in done.stdout
    assert not mark.exists()


def test_a_module_the_operator_names_is_read(tmp_path_factory: pytest.TempPathFactory,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that reads runs of a Python workflow it does not define (the CLI,
    ``serve``) builds it when the operator names its module in
    ``$CRADLE_WORKFLOW_MODULES``; a journal naming another is still refused."""
    from cradle_kg.storage.opening import JOURNAL_URL_ENV
    from cradle_kg.workflow.steps import WORKFLOW_MODULES_ENV

    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = _forged_home(tmp_path_factory, "tests.workflow.flows:routing", workflow="routing")
    status = ("workflow", "status", RUN, "--home", str(home), "--format", "json")
    unnamed = json.loads(cli(*status, timeout=120).stdout)
    assert "tests.workflow.flows" in unnamed["workflow_error"]["message"], unnamed
    named = cli(*status, env={WORKFLOW_MODULES_ENV: "other.mod, tests.workflow.flows"},
                timeout=120)
    assert named.returncode == 0, named.stderr[-2000:]
    built = json.loads(named.stdout)
    assert "workflow_error" not in built and [s["id"] for s in built["steps"]] == ["route"]
