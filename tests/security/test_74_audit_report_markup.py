"""What ``audit verify`` says of a broken journal is what the journal holds, never markup.

Finding: ``audit verify`` (and ``audit anchor``) exist to judge a journal nobody vouches
for — one edited by whoever could write the file — and their line for a broken one,
``BROKEN at seq N (event `ID`): REASON``, was printed through Rich with markup on: the id
and the reason quote the edited row (``event id `…` does not match its position``, the
head's seq as stored). So the one who edited the journal wrote the verdict's markup. An
event id edited to ``evt-x[/]`` made the check end in ``error: unexpected MarkupError``
and exit 2 — no ``BROKEN``, no seq, no event named, the exit code of a usage error, not of
a broken journal (1) — and an id ``[conceal]evt-0000000003`` was shown as
``evt-0000000003`` (its tags swallowed, the rest of the line hidden where the terminal
conceals): the report misquoted the very row that broke the chain.

Now the seq, the id and the reason go through ``clean`` like every other recorded value
the CLI prints: markup escaped, control characters stripped; exit 1 and ``BROKEN`` always.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime
from tests.conftest import make_config, proposal
from tests.inprocess import run_cli

pytestmark = pytest.mark.sqlite_only("edits the SQLite file of the home's journal")


def _journal(home: Path) -> Path:
    with Runtime(home, config=make_config()) as rt:
        out = rt.submit(proposal("p1", "demo.ledger.credit", {"account": "a", "amount": 4},
                                 task_id="t"))
        assert out.status is OutcomeStatus.EXECUTED
    path = home / "journal.sqlite"
    assert path.is_file()
    return path


def _edit(path: Path, sql: str, *args: object) -> None:
    con = sqlite3.connect(path)
    try:
        with con:
            con.execute(sql, args)
    finally:
        con.close()


@pytest.mark.parametrize("command", ["verify", "anchor"])
@pytest.mark.parametrize("event_id", ["evt-x[/]", "[conceal]evt-0000000003",
                                      "[link=https://example.invalid]evt[/link]",
                                      "evt-[bold]\x1b[2Jx"])
def test_an_edited_event_id_is_quoted_as_it_is(home: Path, command: str,
                                               event_id: str) -> None:
    path = _journal(home)
    _edit(path, "UPDATE events SET id = ? WHERE seq = 3", event_id)
    res = run_cli("audit", command, "--home", str(home))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "unexpected" not in res.stderr
    shown = event_id.replace("\x1b", "")
    assert f"BROKEN at seq 3 (event `{shown}`)" in res.stdout
    assert f"event id `{shown}` does not match its position 3" in res.stdout
    assert "\x1b" not in res.stdout


def test_a_head_seq_of_text_is_quoted_as_it_is(home: Path) -> None:
    path = _journal(home)
    _edit(path, "UPDATE head SET seq = ?", "9[/][conceal]")
    res = run_cli("audit", "verify", "--home", str(home))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "BROKEN" in res.stdout and "9[/][conceal]" in res.stdout
