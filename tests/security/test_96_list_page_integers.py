"""``approvals list`` and ``tasks list`` refuse a page past 64 bits in one line, as ``runs``.

Finding (the fourth attack review): ``test_66`` bounded a page's ``limit`` and ``offset``
where the runs are listed (``runs.list_page``), but the two other paged listings ask the
journal directly: ``approvals list --offset 99999999999999999999999`` (or ``--limit``) and
``tasks list`` with the same ended ``error: unexpected OverflowError: Python int too large
to convert to SQLite INTEGER`` (exit 2, the parameter unnamed; on PostgreSQL the journal's
query failed instead); ``ApprovalBook.page`` and ``task_page`` raised it to any Python
caller.

Now every paged listing checks its page first, with one helper (``inputs.check_page``,
which ``runs.list_page`` uses too): an ``InputError`` naming the parameter, one ``error:``
line and exit 2; the largest offset that fits answers an empty page, as before. The real
command line, on both journals.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import InputError
from cradle_kg.loop.escalation import task_page

from ..inprocess import run_cli
from .mcp_http import two_agent_home, waiting_close

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

HUGE = "99999999999999999999999"
FITS = str(2**63 - 1)


@pytest.mark.parametrize("listing", [["approvals", "list"], ["tasks", "list", "--all"]],
                         ids=["approvals", "tasks"])
@pytest.mark.parametrize("option", ["--offset", "--limit"])
def test_the_cli_refuses_it_in_one_line(tmp_path: Path, listing: list[str],
                                        option: str) -> None:
    home = two_agent_home(tmp_path / "home")
    waiting_close(home)
    done = run_cli(*listing, "--home", str(home), option, HUGE)
    # before: `error: unexpected OverflowError: Python int too large to convert to SQLite
    # INTEGER` (PostgreSQL: the journal's query failed)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith(f"error: `{option[2:]}`"), done.stderr
    assert "unexpected" not in done.stderr and len(done.stderr.splitlines()) == 1
    fits = run_cli(*listing, "--home", str(home), "--offset", FITS, "--format", "json")
    assert fits.returncode == 0 and fits.stdout.strip() == "[]", (fits.stdout, fits.stderr)


def test_python_callers_get_the_typed_error(tmp_path: Path) -> None:
    home = two_agent_home(tmp_path / "home")
    waiting_close(home)
    with Runtime(home, graph_sync=False) as rt:
        for limit, offset in ((10, 2**64), (10, -1), (2**63, 0)):
            with pytest.raises(InputError):
                rt.approvals.page(limit=limit, offset=offset)
            with pytest.raises(InputError):
                task_page(rt.journal, include_resolved=True, limit=limit, offset=offset)
        assert rt.approvals.page(limit=None)[1] == 1
        assert task_page(rt.journal, include_resolved=True)[1] == 0
