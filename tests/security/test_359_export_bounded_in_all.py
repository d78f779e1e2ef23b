"""``export`` is bounded in all, not only per graph, and writes its file whole or not at all.

Finding: each answer of a remote graph store is held to ``MAX_ANSWER_BYTES`` (1 GiB), but
``export`` reads every graph the store lists, and the store decides how many there are: a
hostile store (or anyone on the plain-HTTP path to it) listing many graphs, each answered
near the cap, had ``export`` read and hold them all. Now what an export reads is bounded
in all: ``MAX_EXPORT_BYTES`` (1 GiB) by default, ``export --max-bytes`` to change it. Each
graph's answer is read within the room left, and past it the export is
``graph_export_too_large``, having asked for no more graphs. ``--output`` is written to a
file beside it and renamed at the end: an export refused leaves no file, and an old one as
it was.

A real HTTP store on 127.0.0.1 answers every graph-store ``GET``; a real demo home.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.errors import GraphExportTooLargeError
from cradle_kg.storage.graph_config import parse_setting, resolve
from cradle_kg.storage.sparql_http import SparqlHttpStore
from tests import demo_template

from ..inprocess import run_cli
from .sparql_target import answering

#: N-Triples of 100,000 bytes or so: 1,000 triples of a 60-character literal
BODY = "".join(f'<http://example.org/s{i}> <http://example.org/p> "{"x" * 60}" .\n'
               for i in range(1000)).encode()
GRAPHS = [f"https://w3id.org/cradle/run/r{i}" for i in range(200)]


def test_the_store_s_graphs_are_read_within_a_bound_in_all() -> None:
    seen: list[str] = []
    with answering(BODY, "application/n-triples", seen=seen) as url:
        store = SparqlHttpStore(resolve(parse_setting(f"store={url}/store "
                                                      f"query={url}/q update={url}/u")))
        try:
            with pytest.raises(GraphExportTooLargeError) as info:
                store.nquads(graphs=GRAPHS, max_bytes=1_000_000)
            asked = len(seen)
            small = store.nquads(graphs=GRAPHS[:3], max_bytes=1_000_000)
        finally:
            store.close()
    assert info.value.code == "graph_export_too_large"
    assert "larger than 1000000 bytes" in info.value.message, info.value.message
    assert "--max-bytes" in (info.value.hint or "")
    # the graphs within the room, and the one that did not fit: no more was asked for
    assert asked == 1_000_000 // len(BODY) + 1, asked
    assert small.count("\n") == 3000  # within the bound, the export is as before


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("export-bound") / "home"
    demo_template.demo_home(home, tmp_path_factory)
    return home


def test_export_past_the_bound_writes_nothing(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo.nq"
    done = run_cli("export", "--home", str(demo), "--format", "nquads", "--output", str(out),
                   "--max-bytes", "1000")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "larger than 1000 bytes" in " ".join(done.stderr.split()), done.stderr
    assert list(tmp_path.iterdir()) == []  # no file, no file beside it
    out.write_text("an older export\n", encoding="utf-8")
    done = run_cli("export", "--home", str(demo), "--format", "trig", "--output", str(out),
                   "--max-bytes", "1000")
    assert done.returncode == 2
    assert out.read_text(encoding="utf-8") == "an older export\n"
    assert list(tmp_path.iterdir()) == [out]


def test_export_within_the_bound_is_written_whole(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo.nq"
    out.write_text("an older export\n", encoding="utf-8")
    out.chmod(0o640)
    done = run_cli("export", "--home", str(demo), "--format", "nquads", "--output", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert text.count("\n") > 100 and "older" not in text
    assert out.stat().st_mode & 0o777 == 0o640  # the file's mode kept
    assert list(tmp_path.iterdir()) == [out]
