"""The runtime's graph: pure projection, store = journal, validate / export / ontology CLIs,
and the commit-time integrity check."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from rdflib import Dataset, Graph, Namespace
from rdflib.namespace import RDF

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.graph import project as projection
from cradle_kg.graph.project import project_nquads
from cradle_kg.graph.vocab import ONTOLOGY_FILE
from cradle_kg.storage.graph_opening import open_graph_store
from cradle_kg.storage.opening import open_home_journal
from tests import demo_template

from .conftest import proposal
from .inprocess import run_cli

CRADLE = Namespace("https://w3id.org/cradle#")
PROV = Namespace("http://www.w3.org/ns/prov#")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (tests/inprocess): same main, exit code and output."""
    return run_cli(*args)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("graph") / "home"
    demo_template.demo_home(home, tmp_path_factory)
    return home


@pytest.fixture(scope="module")
def demo_nquads(demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "demo.nq"
    done = cli("export", "--home", str(demo), "--format", "nquads", "--output", str(out))
    assert done.returncode == 0, done.stderr
    return out


def test_projection_is_pure_and_the_store_matches_it(demo: Path, demo_nquads: Path,
                                                     graph_backend: str, tmp_path: Path) -> None:
    with open_home_journal(demo) as journal:
        first = project_nquads(journal.events())
        second = project_nquads(journal.events())
    assert first == second
    assert demo_nquads.read_text(encoding="utf-8") == first  # incremental store == projection
    out = tmp_path / "backend.nq"  # the same export from the backend under test
    done = cli("export", "--home", str(demo), "--format", "nquads", "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == first


def test_nquads_lines_are_the_triples_with_their_graph(demo: Path) -> None:
    """``project_event`` (the rebuild's lines, each written whole) and ``event_quads`` (the
    sync's and the commit check's triples) say the same thing, in the same order."""
    with open_home_journal(demo) as journal:
        events = list(journal.events())
    assert events
    for ev in events:
        own, shared = projection.event_quads(ev)
        graph = projection.run_graph(ev.run_id)
        assert projection.project_event(ev) == (
            [f"{t} {graph} .\n" for t in own]
            + [f"{t} <{projection.SHARED_GRAPH}> .\n" for t in shared])


def test_rebuild_recreates_the_same_graph(demo: Path, demo_nquads: Path, tmp_path: Path,
                                         graph_backend: str) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(demo, copy)
    done = cli("graph", "rebuild", "--home", str(copy))
    assert done.returncode == 0, done.stderr
    assert "rebuilt" in done.stdout
    store = open_graph_store(copy)
    assert store.nquads() == demo_nquads.read_text(encoding="utf-8")
    store.close()


def _sst_files(store: Path) -> int:
    return sum(1 for f in store.iterdir() if f.suffix == ".sst")


def test_rebuild_leaves_the_store_compacted_and_compact_compacts(demo: Path,
                                                                 tmp_path: Path) -> None:
    """A store just loaded is many overlapping files (a scan reads them all: the bench's
    aggregate cost 3.3 times the CPU); ``graph rebuild`` compacts the new store before it
    is swapped in, knowledge graphs included, and ``graph compact`` compacts a store in
    place. Compacted, a store this small holds about one file per column family of
    Oxigraph's (11; 9 to 13 seen), where a rebuild that did not compact left 32, and 43
    with the knowledge graphs installed after it."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(demo, copy)
    graph = copy / "graph"
    done = cli("graph", "compact", "--home", str(copy))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("compacted: "), done.stdout
    assert _sst_files(graph) <= 16
    before = open_graph_store(copy)
    quads = before.nquads()
    before.close()
    done = cli("graph", "rebuild", "--home", str(copy))
    assert done.returncode == 0, done.stderr
    assert _sst_files(graph) <= 16
    after = open_graph_store(copy)
    assert after.nquads() == quads  # the same graph, knowledge graphs too
    after.close()


def test_compact_refuses_a_busy_store_in_one_line(demo: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(demo, copy)
    held = open_graph_store(copy)
    try:
        done = cli("graph", "compact", "--home", str(copy))
    finally:
        held.close()
    assert done.returncode != 0
    assert done.stderr.startswith("error: graph store is busy"), done.stderr


@pytest.mark.usefixtures("graph_backend")
def test_demo_graph_validates_clean(demo: Path) -> None:
    done = cli("validate", "--all", "--home", str(demo), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout) == {"conforms": True, "violations": []}
    one = cli("validate", "--run", "run:task-close", "--home", str(demo), "--format", "json")
    assert one.returncode == 0, one.stdout + one.stderr
    assert cli("validate", "--run", "run:nope", "--home", str(demo)).returncode == 2


# each edit breaks exactly one rule of a demo graph that conforms
A = "https://w3id.org/cradle#"


def _break(text: str, rule: int) -> str:
    lines = text.splitlines(keepends=True)
    executed = [ln for ln in lines if f"<{A}executedAt>" in ln]
    action = executed[0].split(" ")[0]
    graph = executed[0].rsplit(" ", 2)[-2]
    authorized = next(ln for ln in lines if ln.startswith(action) and f"<{A}authorizedBy>" in ln)
    decision = authorized.split(" ")[2]
    if rule == 1:
        return "".join(ln.replace(f"<{A}Allow>", f"<{A}Clarify>") if ln.startswith(decision)
                       and f"<{A}verdict>" in ln else ln for ln in lines)
    if rule == 2:  # every approval withdrawn: each approved high-risk action breaks rule 2
        assert f"<{A}approvalStatus> <{A}Approved>" in text
        return text.replace(f"<{A}approvalStatus> <{A}Approved>",
                            f"<{A}approvalStatus> <{A}Rejected>")
    if rule == 3:
        verified = next(ln for ln in lines if f"<{A}verificationStatus> <{A}Verified>" in ln)
        return text.replace(verified, verified.replace(f"<{A}Verified>", f"<{A}Failed>"))
    if rule == 4:
        return text + (f"<urn:x:fact> <{RDF.type}> <{A}Fact> {graph} .\n"
                       f"<urn:x:fact> <{A}verificationStatus> <{A}Verified> {graph} .\n")
    if rule == 5:
        obs = next(ln for ln in lines if f"<{RDF.type}> <{A}Observation>" in ln).split(" ")[0]
        return text + f"{obs} <{RDF.type}> <{A}Fact> {graph} .\n"
    if rule == 6:
        # a decision evaluates its proposal and (issue 14) its context: take the proposal
        proposal_iri = next(ln for ln in lines if ln.startswith(decision)
                            and f"<{A}evaluates>" in ln and "/proposal/" in ln).split(" ")[2]
        return text + (f"<urn:x:deny> <{RDF.type}> <{A}Decision> {graph} .\n"
                       f"<urn:x:deny> <{A}verdict> <{A}Deny> {graph} .\n"
                       f"<urn:x:deny> <{A}evaluates> {proposal_iri} {graph} .\n")
    if rule == 7:
        by = next(ln for ln in lines if ln.startswith(action) and f"<{A}executedBy>" in ln)
        return text.replace(by, by.replace(by.split(" ")[2], "<urn:x:mallory>"))
    if rule == 8:
        key = next(ln for ln in lines if ln.startswith(action) and f"<{A}idempotencyKey>" in ln)
        other = next(ln.split(" ")[0] for ln in executed[1:] if not ln.startswith(action))
        other_key = next(ln for ln in lines if ln.startswith(other)
                         and f"<{A}idempotencyKey>" in ln)
        return text.replace(other_key, other_key.replace(other_key.split(" ")[2],
                                                         key.split(" ")[2]))
    raise AssertionError(rule)


@pytest.mark.parametrize("rule", range(1, 9))
def test_hand_edits_that_break_a_rule_are_caught(demo_nquads: Path, tmp_path: Path,
                                                 rule: int) -> None:
    broken = tmp_path / f"rule{rule}.nq"
    broken.write_text(_break(demo_nquads.read_text(encoding="utf-8"), rule), encoding="utf-8")
    done = cli("validate", str(broken), "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    rules = {v["rule"] for v in json.loads(done.stdout)["violations"]}
    assert rule in rules, rules


def test_validate_reports_parse_errors_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix ex: <http://e/> .\nex:a ex:b ex:c .\nex:a ex:b .\n")
    done = cli("validate", str(bad))
    assert done.returncode == 2
    assert re.search(r"bad\.ttl:3", done.stderr), done.stderr
    assert cli("validate").returncode == 2  # nothing to validate: usage error


@pytest.mark.parametrize(("fmt", "parser"), [("trig", "trig"), ("nquads", "nquads"),
                                             ("turtle", "turtle"), ("jsonld", "json-ld")])
@pytest.mark.usefixtures("graph_backend")
def test_export_formats_parse_back(demo: Path, fmt: str, parser: str, tmp_path: Path) -> None:
    out = tmp_path / f"x.{fmt}"
    done = cli("export", "--home", str(demo), "--run", "run:task-close", "--format", fmt,
               "--output", str(out))
    assert done.returncode == 0, done.stderr
    data = Dataset()
    data.parse(out, format=parser)
    assert len(data) > 20 or sum(1 for _ in data.quads((None, None, None, None))) > 20


@pytest.mark.usefixtures("graph_backend")
def test_export_is_readable_as_prov(demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.ttl"
    assert cli("export", "--home", str(demo), "--run", "run:task-close", "--format", "turtle",
               "--output", str(out)).returncode == 0
    g = Graph().parse(out).parse(ONTOLOGY_FILE)
    rows = g.query("""
        PREFIX prov: <http://www.w3.org/ns/prov#>
        PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
        SELECT ?x ?top WHERE { ?x a ?c . ?c rdfs:subClassOf* ?top .
                               VALUES ?top { prov:Activity prov:Entity prov:Agent } }""")
    tops = {(str(r[0]), str(r[1])) for r in rows}  # type: ignore[index]
    actions = {s for s in g.subjects(RDF.type, CRADLE.Action)}
    assert actions
    assert all((str(a), str(PROV.Activity)) in tops for a in actions)
    assert any(t == str(PROV.Entity) for _, t in tops)
    # PROV relations are usable as such: who was the action associated with?
    assert list(g.triples((None, CRADLE.executedBy, None)))


def test_ontology_check_cli(tmp_path: Path) -> None:
    done = cli("ontology", "check", "--format", "json", "--no-packs")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["consistent"] is True
    bad = tmp_path / "both.ttl"
    bad.write_text("@prefix cradle: <https://w3id.org/cradle#> .\n"
                   "<urn:x:thing> a cradle:Observation , cradle:Fact .\n")
    done = cli("ontology", "check", "--with", str(bad), "--no-packs")
    assert done.returncode == 1
    assert "inconsistent" in done.stdout.lower()


def test_integrity_violation_aborts_the_commit_and_is_journaled(
        rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    # make the projection say "Failed" for a verified check: rule 3 must stop the commit
    monkeypatch.setitem(projection.VERIFICATIONS, "verified", "Failed")
    out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 1}))
    assert out.status is OutcomeStatus.FAILED
    assert out.transition is not None and out.transition.committed_at is None
    assert "rule 3" in (out.transition.reason or "")
    aborted = [e for e in rt.journal.events() if e.kind == "transition.aborted"]
    assert aborted and "rule 3" in aborted[-1].payload["transition"]["reason"]


@pytest.mark.usefixtures("graph_backend")
def test_graph_updates_as_events_are_appended(rt: Runtime) -> None:
    rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 1}))
    store = rt.graph()
    assert store is not None
    assert store.projected_seq() == rt.journal.head()[0]
    ask = store.query(f"ASK {{ ?a a <{A}Action> ; <{A}executedAt> ?t }}")
    assert bool(ask)
