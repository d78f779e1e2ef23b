"""``validate --all`` by shape groups (bulk.py) gives the report of the whole graph at once.

Every comparison is against :func:`validate_whole`: the store's canonical N-Quads in one
Rust validation with the same shapes.
"""

from __future__ import annotations

import gc
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg.graph import bulk
from cradle_kg.graph.bulk import shape_projection, validate_store, validate_whole
from cradle_kg.graph.catchup import catch_up
from cradle_kg.graph.shacl import Shapes, ValidationReport, load_shapes
from cradle_kg.graph.vocab import CRADLE_NS
from cradle_kg.storage.graph import META_GRAPH
from cradle_kg.storage.opening import open_home_journal
from cradle_kg.storage.oxigraph import OxigraphStore
from tests import demo_template

C = CRADLE_NS
XSD = "http://www.w3.org/2001/XMLSchema#"
SH = "http://www.w3.org/ns/shacl#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("bulk") / "demo"
    demo_template.demo_home(home, tmp_path_factory)
    return home


@pytest.fixture
def store(demo_home: Path, tmp_path: Path) -> Iterator[OxigraphStore]:
    home = tmp_path / "home"
    shutil.copytree(demo_home, home)
    graph = OxigraphStore(home / "graph")
    journal = open_home_journal(home)
    catch_up(graph, journal)
    journal.close()
    yield graph
    graph.close()


@pytest.fixture(params=[1, 2], ids=["in-process", "workers"])
def workers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(bulk, "MIN_ROWS_FOR_WORKERS", 0)  # use processes even on a demo
    return int(request.param)


def key(report: ValidationReport) -> tuple[bool, set[tuple[int | None, str, str, str]]]:
    return report.conforms, {(v.rule, v.focus_node, v.shape, v.message)
                             for v in report.violations}


def assert_same(fast: ValidationReport, whole: ValidationReport) -> None:
    assert key(fast) == key(whole)
    # the same multiset of violations (ties of the report's sort key come in engine order)
    assert sorted(fast.violations, key=repr) == sorted(whole.violations, key=repr)
    # the merged Turtle is one sh:ValidationReport holding every result
    triples = list(ox.parse(fast.report_turtle, format=ox.RdfFormat.TURTLE))
    reports = [t.subject for t in triples if t.object == ox.NamedNode(f"{SH}ValidationReport")]
    assert len(reports) == 1
    conforms = [t.object for t in triples if t.predicate == ox.NamedNode(f"{SH}conforms")]
    assert [c.value for c in conforms if isinstance(c, ox.Literal)] == [
        "true" if fast.conforms else "false"]
    results = [t for t in triples if t.predicate == ox.NamedNode(f"{SH}result")]
    assert len(results) == len(fast.violations)


def executed(store: OxigraphStore) -> list[tuple[str, str]]:
    """(run graph, action): an executed action of each run that has one."""
    found = store.store.query(f"SELECT ?g ?a WHERE {{ GRAPH ?g {{ ?a <{C}executedAt> ?t }} }} "
                              "ORDER BY ?g ?a")
    assert isinstance(found, ox.QuerySolutions)
    per_run: dict[str, str] = {}
    for sol in found:
        g, a = sol[0], sol[1]
        assert isinstance(g, ox.NamedNode) and isinstance(a, ox.NamedNode)
        per_run.setdefault(g.value, a.value)
    return sorted(per_run.items())


def add(store: OxigraphStore, nquads: str) -> None:
    store.store.load(nquads, format=ox.RdfFormat.N_QUADS)
    store.store.flush()


def remove(store: OxigraphStore, graph: str, s: str, p: str) -> None:
    store.store.update(f"DELETE WHERE {{ GRAPH <{graph}> {{ <{s}> <{p}> ?o }} }}")


def test_demo_home_same_report(store: OxigraphStore, workers: int) -> None:
    shapes = load_shapes()
    whole = validate_whole(store, shapes)
    fast = validate_store(store, shapes, workers=workers)
    assert_same(fast, whole)
    assert fast.conforms


def break_runs(store: OxigraphStore) -> list[str]:
    """Break several runs by writing into their graphs; returns the runs touched."""
    runs = executed(store)
    assert len(runs) >= 2, runs
    (g1, a1), (g2, a2) = runs[:2]
    # rule 8 across runs: two runs' executed actions share one idempotency key
    for g, a in ((g1, a1), (g2, a2)):
        remove(store, g, a, f"{C}idempotencyKey")
        add(store, f'<{a}> <{C}idempotencyKey> "shared-key" <{g}> .\n')
    # rule 7 in run 1: someone else ran it
    remove(store, g1, a1, f"{C}executedBy")
    add(store, f"<{a1}> <{C}executedBy> <urn:x:intruder> <{g1}> .\n")
    # rule 6 in run 2: a denial of a proposal that contains the action; and a bad hash
    add(store, f"<urn:x:prop> <{C}contains> <{a2}> <{g2}> .\n"
               f"<urn:x:deny> <{RDF_TYPE}> <{C}Decision> <{g2}> .\n"
               f"<urn:x:deny> <{C}verdict> <{C}Deny> <{g2}> .\n"
               f"<urn:x:deny> <{C}evaluates> <urn:x:prop> <{g2}> .\n"
               f'<{a2}> <{C}inputHash> "md5:0" <{g2}> .\n')
    # rule 1 in run 2: an execution nothing authorized, with a time that is no dateTime
    add(store, f'<urn:x:act> <{C}executedAt> "yesterday" <{g2}> .\n'
               f"<urn:x:act> <{C}executedBy> <urn:x:bot> <{g2}> .\n")
    # structure through a subclass in the data: a Decision without a verdict
    add(store, f"<urn:x:Special> <http://www.w3.org/2000/01/rdf-schema#subClassOf> "
               f"<{C}Decision> <{g1}> .\n"
               f"<urn:x:odd> <{RDF_TYPE}> <urn:x:Special> <{g1}> .\n")
    # outside the run graphs (default graph, meta graph): never validated, by either path
    add(store, f'<urn:x:stray> <{C}executedAt> "no" .\n'
               f'<urn:x:stray> <{C}executedAt> "no" <{META_GRAPH}> .\n')
    return [g1, g2]


def test_broken_runs_same_report(store: OxigraphStore, workers: int) -> None:
    break_runs(store)
    shapes = load_shapes()
    whole = validate_whole(store, shapes)
    fast = validate_store(store, shapes, workers=workers)
    assert_same(fast, whole)
    assert not fast.conforms
    assert {1, 6, 7, 8} <= fast.rules()
    assert any(v.rule is None and v.focus_node == "urn:x:odd" for v in fast.violations)
    assert len([v for v in fast.violations if v.rule == 8]) == 1  # the later one only
    assert not any("urn:x:stray" in v.focus_node for v in fast.violations)


def test_rule8_pairs_in_several_key_groups_are_reported_once(
        store: OxigraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = executed(store)
    (g1, a1), (g2, a2) = runs[:2]
    for g, a in ((g1, a1), (g2, a2)):  # two shared keys: the pair is found in both groups
        add(store, f'<{a}> <{C}idempotencyKey> "k1" <{g}> .\n'
                   f'<{a}> <{C}idempotencyKey> "k2" <{g}> .\n')
    monkeypatch.setattr(bulk, "_RULE8_BUCKET", 1)
    shapes = load_shapes()
    assert_same(validate_store(store, shapes, workers=1), validate_whole(store, shapes))


def test_one_run(store: OxigraphStore) -> None:
    touched = break_runs(store)
    shapes = load_shapes()
    for graph in touched:
        assert_same(validate_store(store, shapes, graphs=[graph]),
                    validate_whole(store, shapes, graphs=[graph]))


def test_shapes_that_cannot_be_bounded_read_everything(store: OxigraphStore, tmp_path: Path,
                                                       workers: int) -> None:
    extra = tmp_path / "extra.ttl"
    extra.write_text(f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
<urn:x:AnyPredicate> a sh:NodeShape ; sh:targetClass <{C}Proposal> ;
    sh:sparql [ sh:message "proposal with a literal-valued property" ;
                sh:select "SELECT $this WHERE {{ $this ?p ?o . FILTER(isLiteral(?o)) }}" ] .
<urn:x:Closed> a sh:NodeShape ; sh:targetClass <{C}Verification> ; sh:closed true ;
    sh:property [ sh:path <{C}verificationStatus> ] .
""", encoding="utf-8")
    break_runs(store)
    shapes = load_shapes([extra])
    assert shape_projection(shapes) is None
    whole = validate_whole(store, shapes)
    fast = validate_store(store, shapes, workers=workers)
    assert_same(fast, whole)
    assert {v.shape for v in fast.violations} >= {"urn:x:AnyPredicate", "urn:x:Closed"}


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_no_query_result_outlives_the_thread_that_planned(store: OxigraphStore,
                                                          tmp_path: Path) -> None:
    """A plan read on one thread leaves no ``QuerySolutions`` for the collector to drop on
    another. ``_plan`` kept the store's answer in a local, and its frame outlived the call:
    the parser's reference cycles under ``shape_projection`` hold it (frames keep their
    ``f_back``). The collector ran later on another thread — in the CI, the event loop of
    a ``TestClient`` (``tests/test_approval_tool_views.py``) — where pyo3 refused to free
    the result ("PyQuerySolutions is unsendable, but is being dropped on another thread")
    and leaked it."""
    extra = tmp_path / "extra.ttl"
    extra.write_text(f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
<urn:x:Closed> a sh:NodeShape ; sh:targetClass <{C}Verification> ; sh:closed true ;
    sh:property [ sh:path <{C}verificationStatus> ] .
""", encoding="utf-8")
    shapes = load_shapes([extra])
    assert shape_projection(shapes) is None  # the plan reads every predicate: a SELECT
    failed: list[BaseException] = []

    def plan() -> None:
        try:
            bulk._plan(store, shapes, None)
        except BaseException as exc:  # pragma: no cover - said below
            failed.append(exc)

    gc.collect()
    gc.disable()  # what the plan leaves in cycles is collected here, not on its thread
    try:
        thread = threading.Thread(target=plan)
        thread.start()
        thread.join()
    finally:
        gc.enable()
    assert not failed, failed
    gc.collect()  # on this thread: a result the plan's thread made would be dropped here


def test_projection_of_the_builtin_shapes() -> None:
    proj = shape_projection(load_shapes())
    assert proj is not None and not proj.all_types
    assert {f"{C}{p}" for p in ("executedAt", "idempotencyKey", "contains", "evaluates",
                                 "verdict", "authorizes", "approvalStatus", "checks",
                                 "eventHash", "at")} <= proj.predicates
    assert f"{C}Fact" in proj.classes and f"{C}Decision" in proj.classes
    # what no shape reads is never fetched
    assert not {f"{C}{p}" for p in ("seq", "eventKind", "actor", "records")} & proj.predicates


def test_projection_reads_sparql_and_paths(tmp_path: Path) -> None:
    extra = tmp_path / "extra.ttl"
    extra.write_text("""
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <urn:ex:> .
ex: sh:declare [ sh:prefix "ex" ; sh:namespace "urn:ex:" ] .
ex:S a sh:NodeShape ; sh:targetObjectsOf ex:t ;
    sh:property [ sh:path ( ex:a [ sh:inversePath ex:b ] [ sh:zeroOrMorePath ex:c ] ) ;
                  sh:lessThan ex:d ] ;
    sh:sparql [ sh:prefixes ex: ;
                sh:select "SELECT $this WHERE { $this ex:e/^ex:f ?x . ?x a ex:K }" ] .
""", encoding="utf-8")
    shapes = Shapes.__new__(Shapes)  # only the graph is read
    object.__setattr__(shapes, "graph", load_shapes([extra], builtin=False).graph)
    proj = shape_projection(shapes)
    assert proj is not None
    assert {f"urn:ex:{p}" for p in "tabcdef"} <= proj.predicates
    assert proj.classes == {"urn:ex:K"}
