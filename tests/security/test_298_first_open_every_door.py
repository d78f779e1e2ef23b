"""Every command that opens a runtime on a home leaves nothing behind when the home refuses.

Finding (left by ``test_282``): ``submit``, ``input`` and the commands through
``open_runtime`` open a home whose journal does not exist yet on a throwaway journal first,
so a home that does not load (a pack its ``config.json`` lists and that is not installed,
a Cedar file of its ``policies/`` that does not parse) leaves its files as they were. The
other doors opened the home directly: ``mcp serve``, ``mcp proxy``, ``recover``,
``worker`` and ``pack run`` each answered the same one ``error:`` line and left an empty
journal, the graph store's folder (``mcp``, ``recover``, ``pack run``) and the workers'
leases in the home — the next command found a journal the refused one had made.

Now each opens the home through the one first-open path (``loop.runtime.open_home``,
what ``home_runtime`` calls): one ``error:`` line, exit 2, the home's files unchanged.
(``serve`` refuses a home without a journal before it opens anything; its API opens the
runtime through the same path.)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .homes import without_journal_url
from .inputcli import assert_refused, cli, fresh_home
from .test_282_refused_submit_new_home import _bad_policy, _files, _unknown_pack

pytestmark = pytest.mark.sqlite_only(
    "a home with no journal file yet: a PostgreSQL home's schema exists before its first "
    "command, and it has no throwaway first open")

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = ROOT / "examples" / "notes_contracts.yaml"
EXAMPLE = sorted((ROOT / "packs" / "customs.hs-router" / "examples").glob("*.json"))[0]

#: the command line before ``--home``, and after it
DOORS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "mcp serve": (("mcp", "serve", "--agent", "agent:ledger-assistant"), ()),
    "mcp proxy": (("mcp", "proxy", "--contracts", str(CONTRACTS), "--agent",
                   "agent:ledger-assistant"),
                  ("--", sys.executable, str(ROOT / "examples" / "notes_server.py"))),
    "recover": (("recover",), ()),
    "worker": (("worker",), ()),
    "pack run": (("pack", "run", "customs.hs-router", str(EXAMPLE)), ()),
}
SPOILS: dict[str, tuple[Callable[[Path], None], str]] = {
    "unknown pack": (_unknown_pack, "acme.absent"),
    "policy parse": (_bad_policy, "broken.cedar"),
}


@pytest.mark.parametrize("spoil", list(SPOILS))
@pytest.mark.parametrize("door", list(DOORS))
def test_a_refused_home_is_left_as_it_was(tmp_path: Path, door: str, spoil: str) -> None:
    home = fresh_home(tmp_path / "home")
    spoiler, needle = SPOILS[spoil]
    spoiler(home)
    before = _files(home)
    assert "journal.sqlite" not in before
    head, tail = DOORS[door]
    done = cli(*head, "--home", str(home), *tail, stdin="", env=without_journal_url(),
               timeout=120)
    assert_refused(done, needle)
    assert _files(home) == before  # before: journal.sqlite, workers/, graph/
