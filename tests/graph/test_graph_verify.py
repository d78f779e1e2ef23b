"""``graph verify``'s edges: what it compares beyond the run graphs, and what it leaves."""

from __future__ import annotations

import json
from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg.home import Home
from tests.inprocess import run_cli
from tests.security.homes import embedded_copy, embedded_demo_home


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return embedded_demo_home(tmp_path_factory, "graph-verify", pilots=False)


@pytest.fixture
def home(demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return embedded_copy(demo, tmp_path, monkeypatch)


def _add(home: Path, graph: ox.NamedNode | ox.DefaultGraph) -> None:
    store = ox.Store(str(Home(home).graph))
    store.add(ox.Quad(ox.NamedNode("urn:s"), ox.NamedNode("urn:p"), ox.Literal("o"), graph))
    store.flush()


def _report(home: Path) -> tuple[int, dict[str, object]]:
    done = run_cli("graph", "verify", "--home", str(home), "--format", "json")
    return done.returncode, json.loads(done.stdout)


def test_a_quad_in_the_default_graph_is_different(home: Path) -> None:
    _add(home, ox.DefaultGraph())
    code, report = _report(home)
    assert code == 1
    differing = report["differing"]
    assert isinstance(differing, list)
    assert [d["graph"] for d in differing] == ["(default graph)"]


def test_a_knowledge_graph_no_loaded_pack_builds_is_listed_not_checked(home: Path) -> None:
    old = "https://w3id.org/cradle/pack/some.pack/0.9.0/ontology"
    _add(home, ox.NamedNode(old))
    code, report = _report(home)
    assert code == 0 and report["unchecked"] == [old]
    done = run_cli("graph", "verify", "--home", str(home))
    assert f"not checked (no loaded pack builds it): <{old}>" in done.stdout

