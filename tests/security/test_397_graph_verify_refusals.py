"""``graph verify`` when it cannot compare, or when the store is not this journal's.

A store another process holds (a runtime, a server start-up, a rebuild) would move under
the comparison: refused in one line, exit 2, nothing touched; so are a home without a
store and a remote store that does not answer. A store whose meta graph says it projects
another journal, or events past the journal's head, is different (exit 1), said as
such. Fails before: there was no such command (every case exit 2, none of these lines).
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg import Runtime
from cradle_kg.home import Home
from cradle_kg.storage.graph import JOURNAL, META_GRAPH, SEQ, watermark_update
from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from tests.inprocess import run_cli
from tests.security.homes import embedded_copy, embedded_demo_home


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return embedded_demo_home(tmp_path_factory, "verify-refusals", pilots=False)


@pytest.fixture
def home(demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return embedded_copy(demo, tmp_path, monkeypatch)


def verify(home: Path, env: dict[str, str | None] | None = None) -> tuple[int, str, str]:
    done = run_cli("graph", "verify", "--home", str(home), env=env)
    assert "Traceback" not in done.stdout + done.stderr
    return done.returncode, done.stdout, done.stderr


def test_the_home_as_it_is_verifies_equal(home: Path) -> None:
    code, out, err = verify(home)
    assert code == 0 and out.startswith("equal: "), out + err
    assert "equal: 0 graphs" not in out


def test_a_busy_store_is_refused_in_one_line_and_left_alone(home: Path) -> None:
    with Runtime(home) as rt:
        rt.graph()  # holds the store (and its lock) until closed
        code, out, err = verify(home)
    assert code == 2, out + err
    assert err.startswith("error: graph store is busy: process ")
    assert err.splitlines()[0].endswith(f"holds `{Home(home).graph.with_name('graph.lock')}`")
    assert out == ""


def test_a_home_without_a_store_is_an_error_and_none_is_made(home: Path) -> None:
    shutil.rmtree(Home(home).graph)
    code, out, err = verify(home)
    assert code == 2 and err.startswith("error: no graph store at "), out + err
    assert not Home(home).graph.exists()


def test_an_unreachable_remote_store_is_one_line(home: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = verify(home, {GRAPH_URL_ENV: f"http://127.0.0.1:{port}"})
    assert code == 2 and "cannot reach the graph store" in err.splitlines()[0], out + err


def _meta(home: Path, update: str) -> None:
    store = ox.Store(str(Home(home).graph))
    store.update(update)
    store.flush()


def test_a_store_of_another_journal_is_different(home: Path) -> None:
    meta = f"<{META_GRAPH}>"
    _meta(home, f"DELETE WHERE {{ GRAPH {meta} {{ {meta} <{JOURNAL}> ?v }} }} ; "
                f"INSERT DATA {{ GRAPH {meta} {{ {meta} <{JOURNAL}> \"sha256:0000\" }} }}")
    code, out, err = verify(home)
    assert code == 1, out + err
    assert "store: the store holds the projection of another journal" in out


def test_a_watermark_past_the_journal_s_head_is_different(home: Path) -> None:
    store = ox.Store(str(Home(home).graph))
    seq = next(store.quads_for_pattern(ox.NamedNode(META_GRAPH), ox.NamedNode(SEQ), None,
                                       ox.NamedNode(META_GRAPH))).object
    del store
    _meta(home, watermark_update(int(str(seq.value)) + 50))
    code, out, err = verify(home)
    assert code == 1, out + err
    assert "but the journal ends at" in out
