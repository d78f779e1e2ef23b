"""``budgets set`` refuses a limit or a subject no budget can hold, in one line.

Finding (twentieth attack review): ``budgets set --limit`` took whatever float the shell
gave it: ``-1`` and ``nan`` ended in ``error: unexpected ValidationError`` (pydantic's
text, with its URL), ``inf`` and ``1e400`` in ``error: unexpected ValueError: Out of range
float values are not JSON compliant``; and ``--subject`` took an empty name or one of
5,000 characters (journaled, then printed across a whole screen by ``budgets status``),
where every other id of the home is 1 to ``max_id_length`` characters.

Now the limit must be a finite number, 0 or more, and the subject an id of the home's
size: one ``error:`` line naming the option, exit 2, nothing journaled.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.storage.opening import open_home_journal

from .homes import opened_demo_home
from .inputcli import assert_refused, cli

pytestmark = pytest.mark.sqlite_only("the home's own journal file, counted in this process")


@pytest.mark.parametrize("args,said", [
    (("--limit", "-1"), "--limit"), (("--limit", "nan"), "--limit"),
    (("--limit", "inf"), "--limit"), (("--limit", "1e400"), "--limit"),
    (("--limit", "5", "--subject", ""), "--subject"),
    (("--limit", "5", "--subject", "x" * 5000), "--subject"),
    (("--limit", "5", "--subject", "acme\x07"), "--subject"),
])
def test_a_budget_no_journal_should_hold_is_refused(
        tmp_path_factory: pytest.TempPathFactory, args: tuple[str, ...], said: str) -> None:
    home: Path = opened_demo_home(tmp_path_factory, "t325", embedded=True)
    done = cli("budgets", "set", "--level", "tenant", *args, "--as", "ops", "--home", str(home))
    # before: `error: unexpected ValidationError` / `ValueError`, or the subject journaled
    assert_refused(done, said)
    assert "unexpected" not in done.stderr
    with open_home_journal(home, must_exist=True) as journal:
        assert journal.events_of_kind("budget.set") == []
