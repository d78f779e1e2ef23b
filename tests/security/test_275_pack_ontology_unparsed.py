"""A pack's ontology that does not parse is a typed error naming the file, never a crash.

Finding (malformed files at every door): a pack's Turtle ontology is installed in the
home's graph store as a knowledge graph when the store opens, without having been parsed
by the runtime first. One that does not parse (a truncated file, a byte flipped) escaped
as pyoxigraph's ``SyntaxError``, one that is not UTF-8 as ``UnicodeDecodeError``:
``cradle-kg submit`` executed the credit, journaled it, then said ``error: unexpected
SyntaxError`` and exited 2 (an operator retries what was done); ``graph sync`` the same.
In process the store was left open and locked (the next open in the process found it
busy), and the ontology's knowledge graph was already emptied when the parse failed.

Now each file is read as every file of a pack is (a regular file, bounded, UTF-8) and
parsed before anything is written: an :class:`RdfParseError` naming the file and line;
the store is closed, the graph installed before is left as it was, ``submit`` answers
the outcome and ``graph sync`` one ``error:`` line, exit 2. Since ``test_522`` the
ontology is parsed when the pack loads, so a home whose pack's ontology does not parse
does not open: ``submit`` is that one ``error:`` line, exit 2, before anything is
journaled or run.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.errors import RdfParseError
from cradle_kg.graph.knowledge import knowledge_graph
from cradle_kg.storage.graph_opening import open_graph_store
from cradle_kg.storage.opening import JOURNAL_URL_ENV

from .homes import credit, without_journal_url
from .inputcli import cli
from .malformed import home_with_pack

BROKEN = {
    "does not parse": '@prefix : <https://example.org/acme#> .\n:a :b "unterminated .\n',
    "not UTF-8": '@prefix : <https://example.org/acme#> .\n:a :b "caf\xe9" .\n',
}
GRAPH = knowledge_graph("acme.small", "1.0.0", "ontology")


def _installed(home: Path) -> str:
    store = open_graph_store(home)
    try:
        return store.nquads(graphs=[GRAPH])
    finally:
        store.close()


def _break(folder: Path, text: str) -> None:
    (folder / "ontology.ttl").write_bytes(text.encode("latin-1"))


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_the_runtime_names_the_file_and_keeps_the_graph(tmp_path: Path, case: str,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)  # the home's own SQLite file
    home, folder = home_with_pack(tmp_path / "home")
    with Runtime(home) as rt:
        assert rt.graph() is not None
    before = _installed(home)
    assert "Thing" in before
    _break(folder, BROKEN[case])
    for _ in range(2):  # the store is closed again: the second open finds it free
        with pytest.raises(RdfParseError) as caught, Runtime(home) as rt:
            rt.graph()  # since test_522: refused when the pack loads, before this
        assert "ontology.ttl" in caught.value.message, caught.value.message
        assert "\n" not in caught.value.message
    assert _installed(home) == before  # nothing removed before the parse


def test_the_cli_answers_the_outcome_then_names_the_file(tmp_path: Path) -> None:
    home, folder = home_with_pack(tmp_path / "home")
    env = without_journal_url()

    def submit(n: str) -> subprocess.CompletedProcess[str]:
        proposal = tmp_path / f"credit-{n}.json"
        proposal.write_text(json.dumps(credit(n)), encoding="utf-8")
        return cli("submit", str(proposal), "--home", str(home), env=env)

    done = submit("p-1")  # the control: the pack as shipped
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert json.loads(done.stdout)["status"] == OutcomeStatus.EXECUTED.value
    shipped = (folder / "ontology.ttl").read_bytes()
    _break(folder, BROKEN["does not parse"])
    # since test_522 the home does not open: nothing decided, journaled or run
    done = submit("p-2")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error: ") and "ontology.ttl:2" in done.stderr, done.stderr
    assert "error: unexpected " not in done.stderr and "Traceback" not in done.stderr
    (folder / "ontology.ttl").write_bytes(shipped)
    done = submit("p-2")  # nothing of it was journaled: decided now, not answered again
    assert done.returncode == 0, (done.stdout, done.stderr)
    out = json.loads(done.stdout)
    assert out["status"] == OutcomeStatus.EXECUTED.value and out["replayed"] is False, out
