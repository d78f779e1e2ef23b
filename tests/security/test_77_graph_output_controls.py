"""``query`` and ``export`` write the agents' text to the terminal as data, never as controls.

Finding: ``test_24`` keeps an agent's escapes off the operator's terminal in every table
and line, and ``print_json`` escapes C1 controls and bidi marks "so piping it to a
terminal is safe too" — but the graph's own serialisations were written to stdout as the
serialisers made them. An agent names its run ``run:x<ESC>]0;pwned<BEL><ESC>[2J<CSI>31m
<RLO>evil`` (run ids are the agent's to choose); ``cradle-kg query --sparql 'SELECT ?o
…' --format csv`` or ``--format tsv`` then wrote ESC, BEL, the C1 CSI and the
right-to-left override raw — the terminal set its title to ``pwned``, cleared the screen
and reversed the rest of the line; ``--format json``, a CONSTRUCT (Turtle) and ``cradle-kg
export`` to stdout escaped ESC but left the C1 CSI and the bidi override raw.

Now JSON and TSV results, Turtle, TriG, N-Quads and JSON-LD on stdout go through
``escape_terms``: every control character and bidi mark but tabs and line breaks as a
``\\u`` escape, which each of those syntaxes reads back as the same character (the data is
unchanged: a JSON or TSV reader gets the run id exactly). CSV has no escape: on a terminal
its controls are removed (``terminal_text``); to a file or a pipe it is written exactly.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg import Runtime
from tests.inprocess import run_cli

from .homes import opened_demo_home
from .jsonl_process import ROOT

EVIL = "x\x1b]0;pwned\x07\x1b[2J\u009b31m\u202eevil"
RUN = "run:" + EVIL
CONTROLS = ("\x1b", "\x07", "\u009b", "\u202e")
SELECT = ('SELECT ?o WHERE { GRAPH ?g { ?s <https://w3id.org/cradle#runId> ?o '
          'FILTER(CONTAINS(STR(?o), "pwned")) } } LIMIT 1')
CONSTRUCT = ('CONSTRUCT { ?s <https://w3id.org/cradle#runId> ?o } WHERE { GRAPH ?g { '
             '?s <https://w3id.org/cradle#runId> ?o FILTER(CONTAINS(STR(?o), "pwned")) } }')


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding one proposal of an agent's whose run id carries the escapes."""
    root = opened_demo_home(tmp_path_factory, "graphout")
    with Runtime(root) as rt:
        rt.submit({"id": "p1", "task_id": "t1", "run_id": RUN,
                   "agent_id": "agent:ledger-assistant",
                   "action": {"action_type": "demo.ledger.close_account",
                              "target": "ledger:acct-9", "arguments": {"account": "acct-9"}}})
    return root


def _clean(text: str) -> None:
    assert "pwned" in text, text  # the value is there, as text
    assert not any(c in text for c in CONTROLS), ascii(text)


def test_json_results_are_the_run_id_escaped(home: Path) -> None:
    done = run_cli("query", "--sparql", SELECT, "--format", "json", "--home", str(home))
    assert done.returncode == 0, done
    _clean(done.stdout)
    assert json.loads(done.stdout)["results"]["bindings"][0]["o"]["value"] == RUN


def test_tsv_results_are_the_run_id_escaped(home: Path) -> None:
    done = run_cli("query", "--sparql", SELECT, "--format", "tsv", "--home", str(home))
    assert done.returncode == 0, done
    _clean(done.stdout)
    rows = list(ox.parse_query_results(done.stdout.encode(),
                                       format=ox.QueryResultsFormat.TSV))
    assert [str(r["o"].value) for r in rows] == [RUN]  # type: ignore[union-attr]


def test_a_construct_is_turtle_escaped(home: Path) -> None:
    done = run_cli("query", "--sparql", CONSTRUCT, "--home", str(home))
    assert done.returncode == 0, done
    _clean(done.stdout)
    triples = list(ox.parse(done.stdout.encode(), format=ox.RdfFormat.TURTLE))
    assert [t.object.value for t in triples] == [RUN]


@pytest.mark.parametrize("fmt", ["trig", "nquads", "turtle", "jsonld"])
def test_export_to_stdout_is_escaped(home: Path, fmt: str) -> None:
    done = run_cli("export", "--format", fmt, "--home", str(home))
    assert done.returncode == 0, done
    _clean(done.stdout)


def test_csv_to_a_pipe_is_exact(home: Path) -> None:
    done = run_cli("query", "--sparql", SELECT, "--format", "csv", "--home", str(home))
    assert done.returncode == 0, done
    assert done.stdout.splitlines()[1] == RUN  # no escape syntax in CSV: the data as is


def test_csv_on_a_terminal_has_no_controls(home: Path) -> None:
    """stdout a terminal (a pty): the operator reads the cell, the terminal obeys nothing."""
    master, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.Popen([sys.executable, "-m", "cradle_kg", "query", "--sparql", SELECT,
                             "--format", "csv", "--home", str(home)],
                            stdin=subprocess.DEVNULL, stdout=terminal,
                            stderr=subprocess.PIPE, env=env, cwd=ROOT)
    os.close(terminal)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal's other end closed: the command is done
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    _clean(out.decode("utf-8"))
    assert "run:x]0;pwned[2J31mevil" in out.decode("utf-8")


SHAPE = """@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://example.org/> .
ex:S a sh:NodeShape ; sh:targetClass ex:Note ;
  sh:property [ sh:path ex:text ; sh:maxLength 3 ; sh:message "too long" ] .
"""


@pytest.mark.parametrize("fmt", ["text", "turtle"])
def test_validate_of_a_file_under_review_is_escaped(tmp_path: Path, fmt: str) -> None:
    """The same for ``validate FILE``'s report (found after the review): a file someone
    sent for review names its nodes and values, and the report quotes them."""
    data = tmp_path / "sent.ttl"
    value = (EVIL.replace("\x1b", "\\u001b").replace("\x07", "\\u0007")
             .replace("\u009b", "\\u009b").replace("\u202e", "\\u202e"))
    data.write_text(f'<http://example.org/pwned\u202eevil> a <http://example.org/Note> ; '
                    f'<http://example.org/text> "{value}" .\n', encoding="utf-8")
    shapes = tmp_path / "shapes.ttl"
    shapes.write_text(SHAPE, encoding="utf-8")
    res = run_cli("validate", str(data), "--shapes", str(shapes), "--format", fmt)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "pwned" in res.stdout, res.stdout
    assert not any(c in res.stdout for c in CONTROLS), repr(res.stdout)
