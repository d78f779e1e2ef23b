"""The pack projection hook (issue 14 item 2): ``@projection`` + manifest ``projections:``.

A pack's records reach the run graph from journal events, purely; its shapes check them
at commit; a projector that raises, yields a malformed term or describes a core object
fails that commit closed; a rebuild gives the same quads as the incremental sync.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import ProjectionError
from cradle_kg.graph.catchup import rebuild
from cradle_kg.graph.packproj import core_node, iri, literal
from cradle_kg.packs import load_pack
from cradle_kg.records import OutcomeStatus
from cradle_kg.storage.oxigraph import OxigraphStore

from ..conftest import make_config, proposal

PACK = '''
from pydantic import BaseModel
from cradle_kg.packs.sdk import (IdempotencyClass, SideEffectClass, core_node, iri, literal,
                                 projection, tool)

EX = "https://example.org/proj#"
TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


class In(BaseModel):
    value: str = "x"


class Out(BaseModel):
    value: str = "x"


@tool("test.proj.echo", input_model=In, output_model=Out,
      side_effect_class=SideEffectClass.READ_ONLY, idempotency=IdempotencyClass.NATURAL)
def echo(ctx, call):
    return Out(value=call.arguments.value)


@projection("echoes", kinds=("action.observed",))
def echoes(ev):
    obs = ev.payload["observation"]
    value = obs["output"]["value"]
    if value == "raise":
        raise RuntimeError("projector broke")
    s = iri("https://example.org/proj/echo/" + obs["execution_id"].replace(":", "-"))
    if value == "core":
        s = core_node("action", obs["execution_id"])
    yield (s, iri(TYPE), iri(EX + "Echo"))
    yield (s, iri(EX + "of"), core_node("action", obs["execution_id"]))
    if value == "badterm":
        yield (s, iri(EX + "value"), '"x" . <a:b> <c:d> "y"')
        return
    if value != "noshape":
        yield (s, iri(EX + "value"), literal(value))
'''

SHAPES = '''
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <https://example.org/proj#> .
ex:EchoShape a sh:NodeShape ; sh:targetClass ex:Echo ;
    sh:property [ sh:path ex:value ; sh:minCount 1 ; sh:message "an echo has a value" ] .
'''


def _pack(root: Path) -> Path:
    folder = root / "test.proj"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "mod.py").write_text(PACK)
    (folder / "shapes.ttl").write_text(SHAPES)
    (folder / "manifest.yaml").write_text(textwrap.dedent('''
        id: test.proj
        name: projection hook test pack
        version: 1.0.0
        core_ontology: ">=0.1.0"
        shapes: [shapes.ttl]
        tools: ["mod:echo"]
        projections: ["mod:echoes"]
    '''))
    return folder


@pytest.fixture
def prt(home: Path, tmp_path: Path) -> Runtime:
    rt = Runtime(home, config=make_config())
    rt.load_pack(load_pack(_pack(tmp_path)))
    return rt


def _echo(pid: str, value: str) -> dict[str, object]:
    return proposal(pid, "test.proj.echo", {"value": value}, agent="agent:tester",
                    target="test:x")


def test_a_projection_lands_in_the_run_graph(prt: Runtime) -> None:
    with prt:
        out = prt.submit(_echo("p-ok", "hello"))
        assert out.status is OutcomeStatus.EXECUTED, out.reasons
        store = prt.graph()
        assert store is not None
        rows = list(store.query(
            "SELECT ?s ?v WHERE { GRAPH ?g { ?s a <https://example.org/proj#Echo> ; "
            "<https://example.org/proj#value> ?v } }"))
        assert [r["v"].value for r in rows] == ["hello"]


@pytest.mark.parametrize(("value", "why"), [
    ("raise", "projector `test.proj@1.0.0/echoes` raised"),
    ("core", "states something about the core object"),
    ("badterm", "malformed term"),
    ("noshape", "an echo has a value"),
])
def test_a_failing_projection_fails_the_commit_closed(prt: Runtime, value: str,
                                                      why: str) -> None:
    with prt:
        out = prt.submit(_echo("p-" + value, value))
        assert out.status is OutcomeStatus.FAILED
        assert out.transition is not None and out.transition.committed_at is None
        assert any(why in r for r in out.reasons), out.reasons


def test_a_rebuild_gives_the_quads_of_the_incremental_sync(prt: Runtime, tmp_path: Path) -> None:
    with prt:
        for i in range(3):
            prt.submit(_echo(f"p-{i}", f"v{i}"))
        store = prt.graph()
        assert store is not None
        incremental = store.nquads()
        fresh = OxigraphStore.in_memory()
        rebuild(fresh, prt.journal, projectors=prt.projectors)
        assert fresh.nquads() == incremental
        assert "https://example.org/proj#Echo" in incremental
        bare = OxigraphStore.in_memory()
        rebuild(bare, prt.journal)
        assert "https://example.org/proj#Echo" not in bare.nquads()


@pytest.mark.parametrize("text", ["no scheme", "a:b> <c:d", "a:b c", 'a:"b', ""])
def test_terms_refuse_what_could_smuggle_a_statement(text: str) -> None:
    with pytest.raises(ProjectionError):
        iri(text)


def test_literals_escape_and_type() -> None:
    assert literal('a"b\n') == '"a\\"b\\n"'
    assert literal(True).endswith("#boolean>")
    assert literal(3).endswith("#integer>")
    assert literal("2026-01-01", "http://www.w3.org/2001/XMLSchema#date").endswith("#date>")
    with pytest.raises(ProjectionError):
        literal(float("nan"))
    assert core_node("action", "act:1") == "<https://w3id.org/cradle/id/action/act%3A1>"


def test_validate_all_reads_every_triple_of_a_not_exists_pattern() -> None:
    """Found with the infra shapes: a `;` list inside FILTER NOT EXISTS stays a flat list
    in rdflib's algebra, and `validate --all` fetched one triple of it in three."""
    from rdflib.plugins.sparql import prepareQuery

    from cradle_kg.graph.bulk import _bgp_triples

    q = prepareQuery("PREFIX i: <http://x/> SELECT $this WHERE { $this i:a ?c . "
                     "FILTER NOT EXISTS { ?v i:c 'x' ; i:d ?c ; i:e/i:f i:g . } }")
    preds = {str(p) for _, p, _ in _bgp_triples(q.algebra)}
    assert {"http://x/a", "http://x/c", "http://x/d"} <= preds
    assert len(preds) == 4  # and the path e/f
