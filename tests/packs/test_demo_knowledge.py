"""Issue 14 on the demo home: the packs' knowledge in versioned named graphs, their records
projected through the hook, and the named queries that join them — each with its rows."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import DemoStep
from cradle_kg.graph.knowledge import KnowledgeSource, install, knowledge_graph
from cradle_kg.packs.registry import PackRegistry
from cradle_kg.storage.oxigraph import OxigraphStore
from tests.graph_backends import read_home_graph

from .conftest import PILOTS, pack_dir

#: a module whose set-up is long (servers, browsers, packs built): run first
pytestmark = pytest.mark.slow

HS = "https://w3id.org/cradle/pack/customs/hs2022/"
CUSTOMS_KG = knowledge_graph("customs.hs-router", "1.0.0", "hs2022")


@pytest.fixture(scope="module")
def demo(pilots_demo: tuple[Path, list[DemoStep]]) -> tuple[Path, list[DemoStep]]:
    """The session's demo home (tests/conftest.py): these tests only read it."""
    return pilots_demo


def _rows(home: Path, sparql: str) -> list[dict[str, str]]:
    store = read_home_graph(home)  # a reader: nothing to flush
    solutions = store.query(sparql)
    names = [v.value for v in solutions.variables]
    return [{n: (row[n].value if row[n] is not None else "") for n in names}
            for row in solutions]


def _named(home: Path, pack: str, name: str) -> list[dict[str, str]]:
    registry = PackRegistry.discover(home)
    text = registry.get(pack).query_files()[name].read_text(encoding="utf-8")
    return _rows(home, text)


def test_hs2022_is_skos_generated_from_the_shipped_csv(demo: tuple[Path, Any]) -> None:
    home, _ = demo
    with (pack_dir("customs.hs-router") / "data/hs2022/harmonized-system.csv").open(
            encoding="utf-8-sig", newline="") as f:
        levels = Counter(row["level"] for row in csv.DictReader(f))
    kinds = {r["k"].rsplit("#", 1)[1]: int(r["n"]) for r in _rows(home, f"""
        SELECT ?k (COUNT(?c) AS ?n) WHERE {{ GRAPH <{CUSTOMS_KG}> {{ ?c a ?k }}
        FILTER (STRSTARTS(STR(?k), "https://w3id.org/cradle/pack/customs#")) }} GROUP BY ?k""")}
    assert kinds == {"HSSection": 21, "HSChapter": levels["2"], "HSHeading": levels["4"],
                     "HSSubheading": levels["6"]}
    chain = _rows(home, f"""PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
        SELECT ?n WHERE {{ <{HS}880622> skos:broader+ ?b . ?b skos:notation ?n }}""")
    assert sorted(r["n"] for r in chain) == ["88", "8806", "XVII"]
    label = _rows(home, f"""PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
        SELECT ?l ?v WHERE {{ <{HS}880622> skos:prefLabel ?l ; skos:notation "8806.22" ;
        <https://w3id.org/cradle/pack/customs#validFrom> ?v }}""")
    assert label and label[0]["l"].startswith("Unmanned aircraft") and label[0]["v"] == \
        "2022-01-01"


def test_every_pack_version_has_its_own_graphs(demo: tuple[Path, Any]) -> None:
    home, _ = demo
    store = read_home_graph(home)
    graphs = store.knowledge_graphs()
    assert "https://w3id.org/cradle/pack/customs.hs-router/1.0.0/hs2022" in graphs
    assert "https://w3id.org/cradle/pack/customs.hs-router/1.0.0/dual-use" in graphs
    assert "https://w3id.org/cradle/pack/infra.uptimeharbor/1.0.0/ontology" in graphs
    assert not set(graphs) & set(store.run_graphs())  # never counted as runs
    assert "/pack/customs.hs-router/1.0.0/" not in store.nquads()  # nor in a run export


def test_reopening_an_unchanged_version_reinstalls_nothing(demo: tuple[Path, Any]) -> None:
    home, _ = demo
    with Runtime(home) as rt:
        store = rt.graph()
        assert store is not None
        before = {g: store.knowledge_digest(g) for g in store.knowledge_graphs()}
        assert install(store, rt.knowledge) == []
        assert {g: store.knowledge_digest(g) for g in store.knowledge_graphs()} == before


def test_a_changed_source_file_is_reinstalled(tmp_path: Path) -> None:
    data = tmp_path / "terms.ttl"
    data.write_text("<https://e.org/a> <https://e.org/p> \"1\" .\n")
    graph = knowledge_graph("test.k", "1.0.0", "ontology")
    store = OxigraphStore.in_memory()
    source = KnowledgeSource(graph, (data,))
    assert install(store, [source]) == [graph]
    assert install(store, [source]) == []
    data.write_text("<https://e.org/a> <https://e.org/p> \"2\" .\n")
    assert install(store, [source]) == [graph]
    values = [q.object.value for q in store.store.quads_for_pattern(None, None, None, None)
              if q.graph_name.value == graph]
    assert values == ["2"]


def test_missing_facts_names_the_papers_two_facts(demo: tuple[Path, Any]) -> None:
    home, _ = demo
    rows = _named(home, "customs.hs-router", "missing-facts")
    assert sorted(r["missing"] for r in rows) == ["maximum_range", "maximum_takeoff_weight"]
    assert len({r["decision"] for r in rows}) == 1


def test_permits_by_hs_code(demo: tuple[Path, Any]) -> None:
    home, _ = demo
    rows = _named(home, "customs.hs-router", "permits-by-hs-code")
    assert rows == [{"hsCode": "8806.93", "permit": "EU-2021/821:9A012", "decisions": "1"}]


def test_classification_sources_join_the_nomenclature(demo: tuple[Path, Any]) -> None:
    home, _ = demo
    rows = _named(home, "customs.hs-router", "classification-sources")
    quadcopter = {(r["kind"], r["notation"]) for r in rows if r["hsCode"] == "8806.22"}
    assert {("HSSection", "XVII"), ("HSChapter", "88"), ("HSHeading", "8806"),
            ("HSSubheading", "8806.22"), ("DualUseEntry", "9A012"),
            ("LegalSource", "WCO:HS2022"), ("LegalSource", "EU-2021/821:AnnexI@2025-11"),
            ("RoutingRule", "pack:customs.hs-router/routing-rule-8806-dual-use")} <= quadcopter
    assert {r["hsCode"] for r in rows} == {"8806.22", "8806.93"}


def test_every_shipped_pack_query_returns_rows_on_the_demo_home(
        demo: tuple[Path, Any]) -> None:
    home, _ = demo
    registry = PackRegistry.discover(home)
    asked = 0
    for pack in (*PILOTS, "demo.ledger"):
        for name in registry.get(pack).query_files():
            assert _named(home, pack, name), f"{pack}: `{name}` returned no rows"
            asked += 1
    assert asked >= 3


def _core(home: Path, name: str) -> list[dict[str, str]]:
    from cradle_kg.graph.queries import QUERIES_DIR
    return _rows(home, (QUERIES_DIR / f"{name}.rq").read_text(encoding="utf-8"))


def test_verified_facts_of_a_goods_line_and_their_evidence(demo: tuple[Path, Any]) -> None:
    home, _ = demo
    rows = [r for r in _core(home, "verified-facts")
            if r["subject"] == "goods-line:customs-quadcopter"]
    facts = {r["predicate"]: r for r in rows}
    assert {"maximum_takeoff_weight", "maximum_range", "endurance"} <= set(facts)
    assert all(r["status"].endswith("#Verified") for r in rows)
    assert all(r["evidence"].startswith("https://w3id.org/cradle/id/evidence/sha256")
               for r in rows)
    assert facts["maximum_takeoff_weight"]["value"] == "0.9"


def test_postconditions_held_after_each_action(demo: tuple[Path, Any]) -> None:
    home, _ = demo
    rows = _core(home, "postconditions")
    by_tool: dict[str, set[tuple[str, str]]] = {}
    for r in rows:
        by_tool.setdefault(r["tool"].rsplit("/", 1)[1], set()).add(
            (r["status"], r["postconditions"].split(";")[0]))
    assert ("verified", "shapes: held") in by_tool["demo.ledger.credit"]
    assert ("failed", "shapes: the entry read back does not credit the amount asked to "
            "the account") in by_tool["demo.ledger.credit_unreliable"]
    assert ("verified", "shapes: held") in by_tool["customs.finalize_classification"]
    assert ("verified", "read-only: not_declared") in by_tool["customs.classify"]


def test_deployment_resources(demo: tuple[Path, Any]) -> None:
    home, _ = demo
    rows = _named(home, "infra.uptimeharbor", "deployment-resources")
    production = [r for r in rows if r["kind"] == "Deployment"
                  and r["environment"] == "production"]
    assert {r["observedChanged"] for r in production} == {
        "harbor:demo-success/production", "harbor:demo-rollback/production"}
    assert {r["status"] for r in production} == {"Verified", "Failed"}
    rollbacks = [r for r in rows if r["kind"] == "Rollback"]
    assert rollbacks and all(r["observedChanged"].endswith(("/staging", "/production"))
                             for r in rollbacks)
    assert all(len(r["sha"]) == 40 for r in rows)


def test_hermit_finds_the_core_and_every_pack_ontology_consistent() -> None:
    from cradle_kg.graph.owl import check_ontology
    from cradle_kg.graph.vocab import ONTOLOGY_FILE
    registry = PackRegistry.discover(None)
    files = [ONTOLOGY_FILE, *(f for p in PILOTS for f in registry.get(p).ontology_files())]
    report = check_ontology(files)
    assert report.consistent and not report.unsatisfiable, report.messages


def test_the_export_reads_as_prov(demo: tuple[Path, Any]) -> None:
    """PROV-O's domains and ranges hold on the demo's export (core and pack triples):
    wasDerivedFrom joins entities, used goes from an activity to an entity,
    wasGeneratedBy from an entity to an activity — read with rdflib, with the ontologies."""
    from rdflib import Dataset, Graph

    from cradle_kg.graph.vocab import ONTOLOGY_FILE
    home, _ = demo
    store = read_home_graph(home)
    data = Dataset()
    data.parse(data=store.nquads(), format="nquads")
    merged = Graph()
    for s, p, o, _ in data.quads((None, None, None, None)):
        merged.add((s, p, o))
    merged.parse(ONTOLOGY_FILE)
    registry = PackRegistry.discover(None)
    for f in (f for p in PILOTS for f in registry.get(p).ontology_files()):
        merged.parse(f)
    prefixes = ("PREFIX prov: <http://www.w3.org/ns/prov#> "
                "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> ")
    for prop, dom, rng in (("wasDerivedFrom", "Entity", "Entity"),
                           ("used", "Activity", "Entity"),
                           ("wasGeneratedBy", "Entity", "Activity")):
        bad = list(merged.query(prefixes + f"""
            SELECT ?s ?o WHERE {{ ?s prov:{prop} ?o .
              FILTER (NOT EXISTS {{ ?s a/rdfs:subClassOf* prov:{dom} }}
                      || NOT EXISTS {{ ?o a/rdfs:subClassOf* prov:{rng} }}) }} LIMIT 5"""))
        assert bad == [], (prop, bad)
    counted = list(merged.query(prefixes + """SELECT (COUNT(*) AS ?n) WHERE {
        ?s prov:wasGeneratedBy ?a . ?a a/rdfs:subClassOf* prov:Activity }"""))
    assert int(counted[0][0]) > 10  # the packs' records hang off the runtime's actions


def test_zz_a_cli_rebuild_keeps_the_packs_records_and_knowledge(
        demo: tuple[Path, Any]) -> None:
    """Runs last on the shared demo home: `graph rebuild` runs the packs' hooks too."""
    from .conftest import cli
    home, _ = demo
    before = _named(home, "customs.hs-router", "classification-sources")
    store = read_home_graph(home)
    runs_before = store.nquads()
    del store
    done = cli("graph", "rebuild", "--home", str(home))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _named(home, "customs.hs-router", "classification-sources") == before
    assert read_home_graph(home).nquads() == runs_before
