"""A pack's graph policy (``.rq``) is read as every file of a pack is: a typed error or none.

Findings (malformed files at every door): a lineage graph policy was read with
``Path.read_text`` and handed to the SPARQL engine as it was —

* **nested 20,000 brackets deep, it killed the process** (a segmentation fault in the
  engine's parser, no output at all): ``pack validate`` — the review of a pack one does
  not trust yet — and every command that opens a home listing the pack. The named queries
  and the JSON API cap the nesting before any parser runs; graph policies did not;
* **a FIFO in its place hung them for ever** (``read_text`` blocks until someone writes);
* **one that is not UTF-8 ended in ``unexpected UnicodeDecodeError``.**

Now a graph policy is read as a regular file of at most the 100 KB of a query, as UTF-8,
and held to the queries' nesting cap before it is parsed: a :class:`ManifestError` naming
the file — ``pack validate`` reports the pack invalid (exit 1), a home that lists it does
not open (one ``error:`` line, exit 2), nothing is journaled.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from cradle_kg.errors import ManifestError
from cradle_kg.lineage.rules import load_rules

from .homes import credit, without_journal_url
from .inputcli import cli
from .malformed import home_with_pack

HEAD = '# @id("freeze-writes")\n# @verdict("deny")\n'


def _deep(path: Path) -> None:
    path.write_text(HEAD + "ASK { " + "{ " * 20_000 + "}" * 20_000 + " }\n",
                    encoding="utf-8")


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _latin_1(path: Path) -> None:
    path.write_bytes((HEAD + 'ASK { ?a ?b "caf\xe9" }\n').encode("latin-1"))


def _journaled(home: Path) -> int:
    """The events in the home's SQLite journal (0 when the refusal left none, or no file)."""
    if not (home / "journal.sqlite").exists():
        return 0
    with sqlite3.connect(home / "journal.sqlite") as db:
        return int(db.execute("SELECT count(*) FROM events").fetchone()[0])


BREAKS: dict[str, Callable[[Path], None]] = {"nested": _deep, "FIFO": _fifo,
                                             "not UTF-8": _latin_1}


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_the_loader_refuses_it_in_one_line(tmp_path: Path, case: str) -> None:
    _, folder = home_with_pack(tmp_path / "home")
    BREAKS[case](folder / "freeze.rq")
    with pytest.raises(ManifestError) as caught:
        load_rules([folder / "freeze.rq"], namespace="acme.small")
    assert "freeze.rq" in caught.value.message and "\n" not in caught.value.message


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_review_and_home_refuse_it(tmp_path: Path, case: str) -> None:
    home, folder = home_with_pack(tmp_path / "home")
    BREAKS[case](folder / "freeze.rq")
    done = cli("pack", "validate", str(folder), "--no-reasoner", "--format", "json",
               timeout=60)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert not report["ok"] and any("freeze.rq" in e for e in report["errors"]), report
    config = (home / "config.json").read_bytes()
    proposal = tmp_path / "credit.json"
    proposal.write_text(json.dumps(credit("p-1")), encoding="utf-8")
    done = cli("submit", str(proposal), "--home", str(home), env=without_journal_url(),
               timeout=60)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and "freeze.rq" in done.stderr, done.stderr
    assert "error: unexpected " not in done.stderr and "Traceback" not in done.stderr
    assert _journaled(home) == 0
    assert (home / "config.json").read_bytes() == config
