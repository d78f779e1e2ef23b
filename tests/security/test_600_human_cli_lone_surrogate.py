"""A person's command naming a run, or noting an answer, in bytes that are not UTF-8.

Finding (twenty-seventh review): ``tasks resolve`` and ``workflow cancel`` check what a
person types before anything is read or written (``check_human_input``: a lone surrogate
— what Python makes of a command-line byte that is not UTF-8 — is refused in one line),
but the other commands a person answers and reads their inbox with did not. ``step decide
RUN STEP --note`` with such a byte in the note, or in the run id, and ``inbox --run``,
``tasks list --run``, ``workflow status`` / ``resume`` with one in the run id, each ended
``error: unexpected UnicodeEncodeError: 'utf-8' codec can't encode character '\\udcff'``
(exit 2: the journal's driver could not encode the parameter), on both journals.

Now the run id of every read of a workflow run (its ``workflow.started``), of the inbox and
of the task listing, and what ``step decide`` is given (run, step, who, answer, note), are
checked as ``tasks resolve`` checks its own: one ``error:`` line naming the value, exit 2,
nothing journaled, the step still waiting for the answer given properly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import InputError
from cradle_kg.inbox import inbox
from cradle_kg.workflow import Engine
from cradle_kg.workflow.definitions import load_file
from cradle_kg.workflow.runner import decide
from tests.inprocess import run_cli
from tests.security.test_32_human_step_decided_once import FLOW
from tests.workflow.conftest import ADMIN, ADMIN_TOKEN, recorded, wf_home  # noqa: F401

pytestmark = pytest.mark.usefixtures("journal_backend")

BAD = "\udcff"  # the byte 0xff of a command line, as Python reads it


def _waiting(home: Path, tmp_path: Path) -> str:
    flow = tmp_path / "two.yaml"
    flow.write_text(FLOW)
    with Runtime(home, graph_sync=False) as rt:
        return Engine(rt, client=recorded()).start(load_file(flow), {"note": "inv 7"}).run_id


def _cli(home: Path, *args: str) -> tuple[int, str]:
    res = run_cli(*args, "--home", str(home), env={"CRADLE_APPROVER_TOKEN": ADMIN_TOKEN})
    return res.returncode, res.stdout + res.stderr


def test_the_commands_refuse_it_in_one_line(wf_home: Path, tmp_path: Path) -> None:  # noqa: F811
    run = _waiting(wf_home, tmp_path)
    with Runtime(wf_home, graph_sync=False) as rt:
        head = rt.journal.head()
    for args in (("step", "decide", run, "route", "--as", ADMIN, "--answer", "pay",
                  "--note", "checked" + BAD),
                 ("step", "decide", run + BAD, "route", "--as", ADMIN, "--answer", "pay"),
                 ("inbox", "--run", run + BAD),
                 ("tasks", "list", "--run", run + BAD),
                 ("workflow", "status", run + BAD),
                 ("workflow", "resume", run + BAD)):
        code, out = _cli(wf_home, *args)
        assert "unexpected" not in out, (args, out)  # before: UnicodeEncodeError
        assert code == 2 and "surrogate" in out, (args, out)
    with Runtime(wf_home, graph_sync=False) as rt:
        assert rt.journal.head() == head  # nothing journaled
        with pytest.raises(InputError, match="surrogate"):  # in process too
            inbox(rt, run_id=BAD)
    code, out = _cli(wf_home, "step", "decide", run, "route", "--as", ADMIN, "--answer", "pay",
                     "--note", "checked")
    assert code == 0, out  # the step still waited


def test_decide_checks_the_note_before_anything(wf_home: Path, tmp_path: Path) -> None:  # noqa: F811
    run = _waiting(wf_home, tmp_path)
    with Runtime(wf_home, graph_sync=False) as rt:
        engine = Engine(rt, client=recorded())
        head = rt.journal.head()
        with pytest.raises(InputError, match="`note`"):  # before: UnicodeEncodeError
            decide(rt, engine, run, "route", by=ADMIN, token=ADMIN_TOKEN, answer="pay",
                   note="fine" + BAD)
        assert rt.journal.head() == head


def test_a_command_that_does_not_check_first_still_says_what_it_is(
        wf_home: Path) -> None:  # noqa: F811
    """The last line of defence (``cli.common.report_unexpected``): a command that binds such
    a value without checking it first (``runs show``) says it in one line, not as an
    ``unexpected UnicodeEncodeError`` (the lead's review of this finding)."""
    with Runtime(wf_home, graph_sync=False) as rt:
        head = rt.journal.head()
    code, out = _cli(wf_home, "runs", "show", "run" + BAD)
    assert "unexpected" not in out, out
    assert code == 2 and "not valid UTF-8" in out, out
    with Runtime(wf_home, graph_sync=False) as rt:
        assert rt.journal.head() == head
