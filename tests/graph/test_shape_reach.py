"""The commit check validates only the triples its shapes can see
(:mod:`cradle_kg.graph.shape_reach`): the same report as on the whole graph, on every
rule's fixtures, by both engines, and on a real run; and no filter at all where a shape
could see a predicate it does not name."""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.graph.rdfio import read_rdf
from cradle_kg.graph.shacl import (
    PyShaclEngine,
    RustShaclEngine,
    load_shapes,
    to_ntriples,
)
from cradle_kg.graph.shape_reach import observed_classes, observed_predicates
from cradle_kg.graph.vocab import INTEGRITY_SHAPES_FILE, STRUCTURE_SHAPES_FILE

from .test_shacl_rules import FIXTURE_FILES

SHAPES = load_shapes([INTEGRITY_SHAPES_FILE, STRUCTURE_SHAPES_FILE], builtin=False)
KEEP = observed_predicates(SHAPES.ntriples)
CLASSES = observed_classes(SHAPES.ntriples)
_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"


def _wanted(triple: str, keep: frozenset[str], classes: frozenset[str] | None) -> bool:
    _, pred, obj = triple.split(" ", 2)
    obj = obj.removesuffix(" .").strip()
    return pred in keep and (pred != _TYPE or classes is None or obj in classes)


def _kept(text: str, keep: frozenset[str], classes: frozenset[str] | None = None) -> str:
    lines = [t for t in text.splitlines() if t.strip()]
    return "".join(t + "\n" for t in lines if _wanted(t, keep, classes))


def _seen(engine: RustShaclEngine | PyShaclEngine, text: str) -> list[tuple[object, ...]]:
    report = engine.validate(text, format="nt")
    return sorted((v.rule or 0, v.focus_node, v.message) for v in report.violations)


def test_the_integrity_shapes_see_a_few_predicates() -> None:
    keep = observed_predicates(load_shapes([INTEGRITY_SHAPES_FILE], builtin=False).ntriples)
    assert keep is not None
    c = "https://w3id.org/cradle#"
    assert {f"<{c}executedAt>", f"<{c}authorizedBy>", f"<{c}idempotencyKey>",
            f"<{c}approver>", f"<{c}expiresAt>",  # named only in rule 2's SPARQL
            "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"} <= keep
    assert f"<{c}checkResult>" not in keep and f"<{c}at>" not in keep


@pytest.mark.parametrize("engine_kind", ["rust", "pyshacl"])
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.stem)
def test_the_kept_triples_give_the_report_of_the_whole_graph(path: Path,
                                                             engine_kind: str) -> None:
    assert KEEP is not None
    engine = RustShaclEngine(SHAPES) if engine_kind == "rust" else PyShaclEngine(SHAPES)
    whole = to_ntriples(read_rdf(path))
    kept = _kept(whole, KEEP)
    assert _seen(engine, kept) == _seen(engine, whole)
    # and with only the types of the classes the shapes name (the commit check's)
    assert CLASSES is not None
    assert _seen(engine, _kept(whole, KEEP, CLASSES)) == _seen(engine, whole)


def test_a_run_is_checked_on_fewer_triples_with_the_same_verdicts(home: Path) -> None:
    """A real run (reads, writes, a denial, an approval asked for): the checker keeps a
    third of each commit's triples, and its verdict on every commit — and on the whole
    run, with a triple removed that rule 1 needs — is the same with every triple."""
    from cradle_kg.graph.project import event_triples, ntriples
    from tests.conftest import proposal

    with Runtime(home) as rt:
        assert rt.integrity is not None and rt.integrity.keep is not None
        for i, (tool, args) in enumerate([
                ("demo.ledger.balance", {"account": "acct-1"}),
                ("demo.ledger.credit", {"account": "acct-1", "amount": 3}),
                ("demo.ledger.credit", {"account": "acct-1", "amount": 10_000}),
                ("demo.ledger.close_account", {"account": "acct-9"})]):
            rt.submit(proposal(f"p{i}", tool, args, run_id="run:reach", step=i + 1))
        events = list(rt.journal.events(run_id="run:reach"))
        whole = [t for ev in events for t in event_triples(ev, header=False)]
        keep, classes = rt.integrity.keep, rt.integrity.classes
        assert classes is not None
        kept = [t for t in whole if t.split(" ", 2)[1] in keep]
        typed = [t for t in whole if _wanted(t, keep, classes)]
        assert 0 < len(typed) < len(kept) < len(whole) / 2
        engine = rt.integrity.engine
        assert _seen(engine, ntriples(typed)) == _seen(engine, ntriples(kept)) == _seen(
            engine, ntriples(whole)) == []
        # break rule 1 (an executed action with no allowing decision): seen either way
        broken = [t for t in whole if "#authorizedBy>" not in t]
        seen = _seen(engine, ntriples(broken))
        assert seen and seen == _seen(engine, ntriples(
            [t for t in broken if t.split(" ", 2)[1] in keep])) == _seen(engine, ntriples(
                [t for t in broken if _wanted(t, keep, classes)]))
        # what the checker holds of the run is those triples, the types filtered
        cached = rt.integrity._cached("run:reach")
        assert {t for g in cached.groups.values() for t in g} | set(cached.misc) == set(typed)


SH = "@prefix sh: <http://www.w3.org/ns/shacl#> .\n@prefix ex: <http://example.org/> .\n"


def _shapes(body: str) -> frozenset[str] | None:
    from cradle_kg.graph.shacl import shapes_from_turtle

    return observed_predicates(shapes_from_turtle([SH + body]).ntriples)


def _sparql(query: str) -> frozenset[str] | None:
    return _shapes('ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:sparql [ sh:select """'
                   + query + '""" ] .')


@pytest.mark.parametrize("query", [
    "SELECT $this WHERE { $this ?p ?o }",  # a variable predicate
    "SELECT $this WHERE { $this <http://example.org/a> ?b ; ?p ?o }",  # after `;`
    "SELECT $this WHERE { [ ?p ?o ] }",
    "SELECT $this WHERE { $this ?p true }",
    "SELECT $this WHERE { $this !<http://example.org/a> ?o }",  # a negated property set
    "SELECT $this WHERE { ?a <http://example.org/a>* ?b }",  # a zero-length path
    "SELECT $this WHERE { ?a <http://example.org/a>? ?b }",
    "SELECT $this WHERE { $this nope:a ?o }",  # a prefix nobody declared
    "SELECT $this WHERE { $this <a> ?o }",  # a relative IRI
])
def test_a_shape_that_may_see_any_predicate_turns_the_filter_off(query: str) -> None:
    assert _sparql(query) is None


def test_a_closed_shape_turns_the_filter_off() -> None:
    assert _shapes("ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:closed true ;"
                   " sh:property [ sh:path ex:a ] .") is None


def _classes(body: str) -> frozenset[str] | None:
    from cradle_kg.graph.shacl import shapes_from_turtle

    return observed_classes(shapes_from_turtle([SH + body]).ntriples)


def test_the_integrity_shapes_see_the_types_of_the_classes_they_name() -> None:
    """The commit check keeps a node's ``rdf:type`` only for a class the shapes name:
    a decision's, a verification's, an observation's; not a policy's or a tool's."""
    classes = observed_classes(load_shapes([INTEGRITY_SHAPES_FILE], builtin=False).ntriples)
    assert classes is not None
    c = "https://w3id.org/cradle#"
    assert {f"<{c}{k}>" for k in ("Decision", "Verification", "Observation", "Fact",
                                   "Evidence", "TrustedSource")} <= classes
    assert not {f"<{c}{k}>" for k in ("Policy", "Tool", "Agent", "Proposal", "Action",
                                       "Task", "Intent", "Context")} & classes
    assert _classes("ex:S a sh:NodeShape ; sh:targetClass ex:C ;"
                    " sh:property [ sh:path ex:a ; sh:class ex:D ] .") >= {
        "<http://example.org/C>", "<http://example.org/D>"}


@pytest.mark.parametrize("body", [
    # rdf:type as a path, a target's predicate, a property pair: any class may count
    "ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:property [ sh:path rdf:type ;"
    " sh:maxCount 1 ] .",
    "ex:S a sh:NodeShape ; sh:targetSubjectsOf rdf:type ; sh:property [ sh:path ex:a ;"
    " sh:minCount 1 ] .",
    "ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:property [ sh:path ex:a ;"
    " sh:equals rdf:type ] .",
    "ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:property [ sh:path"
    " ( ex:a rdf:type ) ; sh:hasValue ex:D ] .",
    # a SPARQL text that reads types: the keyword, or the IRI
    'ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:sparql [ sh:select """SELECT $this'
    ' WHERE { $this a ?c . FILTER (?c != <http://example.org/C>) }""" ] .',
    'ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:sparql [ sh:select """SELECT $this'
    ' WHERE { $this <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> ?c }""" ] .',
    # whatever turns the predicate filter off
    "ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:closed true ;"
    " sh:property [ sh:path ex:a ] .",
])
def test_a_shape_that_may_read_any_type_keeps_every_type(body: str) -> None:
    assert _classes("@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .\n"
                    + body) is None


@pytest.mark.parametrize("engine_kind", ["rust", "pyshacl"])
def test_a_type_of_a_class_no_shape_names_changes_no_report(engine_kind: str) -> None:
    """The same data with and without the types the filter drops: the same report, where
    a shape counts a node's values, and where the dropped type is the node's only triple
    of a kept predicate."""
    from cradle_kg.graph.shacl import shapes_from_turtle

    shapes = shapes_from_turtle([SH + (
        "ex:S a sh:NodeShape ; sh:targetClass ex:C ; sh:property [ sh:path ex:a ;"
        " sh:class ex:D ; sh:maxCount 1 ] .\n"
        "ex:T a sh:NodeShape ; sh:targetSubjectsOf ex:b ; sh:property [ sh:path ex:b ;"
        " sh:class ex:D ] .")])
    keep, classes = observed_predicates(shapes.ntriples), observed_classes(shapes.ntriples)
    assert keep is not None and classes is not None
    engine = RustShaclEngine(shapes) if engine_kind == "rust" else PyShaclEngine(shapes)
    t, e = _TYPE, "http://example.org/"
    whole = "".join(f"{s} .\n" for s in (
        f"<{e}x> {t} <{e}C>", f"<{e}x> {t} <{e}Other>", f"<{e}x> <{e}a> <{e}y>",
        f"<{e}y> {t} <{e}Other>", f"<{e}z> <{e}b> <{e}w>", f"<{e}w> {t} <{e}Policy>",
        f"<{e}v> {t} <{e}D>", f"<{e}z> <{e}b> <{e}v>"))
    kept = _kept(whole, keep, classes)
    assert kept.count("\n") == 5 and f"<{e}Other>" not in kept
    assert _seen(engine, kept) == _seen(engine, whole) != []


def test_what_a_sparql_text_names_is_kept_and_comments_and_strings_are_not_read() -> None:
    keep = _sparql('PREFIX q: <http://q.example/>\nSELECT $this WHERE { $this q:a ?x ; '
                   '<http://example.org/b> "?p ?o" . FILTER (?x != $this && !bound(?y)) '
                   '} # ?s ?p ?o')
    assert keep is not None
    assert {"<http://q.example/a>", "<http://example.org/b>"} <= keep


def test_the_kept_projection_writes_exactly_the_kept_triples_of_every_golden_event() -> None:
    """``event_triples(keep=…)`` (the commit check's) never writes a triple it then drops:
    it must give, in the same order, the triples of the whole projection whose predicate
    is kept — for every event of the golden journals (every kind the demo and the invoice
    triage write)."""
    import json

    from cradle_kg.canonical import parse_iso
    from cradle_kg.graph.project import event_triples
    from cradle_kg.records import AuditEvent

    assert KEEP is not None
    c = "https://w3id.org/cradle#"
    looped = frozenset(f"<{c}{t}>" for t in ("checkResult", "packVersion", "reason", "slot",
                                             "postconditions"))
    core = observed_predicates(load_shapes([INTEGRITY_SHAPES_FILE], builtin=False).ntriples)
    assert core is not None and not looped & core  # the commit check's: none of them
    golden = Path(__file__).resolve().parents[1] / "golden"
    kinds = set()
    for name in ("demo", "invoice_triage"):
        for line in (golden / name / "journal.jsonl").read_text(encoding="utf-8").splitlines():
            e = json.loads(line)
            ev = AuditEvent(seq=e["seq"], id=f"evt-{e['seq']:010d}", run_id=e["run_id"],
                            kind=e["kind"], subject=e["subject"], actor=e["actor"],
                            at=parse_iso(e["at"]), payload=e["payload"],
                            payload_hash=e.get("payload_hash", "sha256:" + "0" * 64),
                            prev_hash=e.get("prev_hash", "sha256:" + "0" * 64),
                            hash=e["hash"])
            whole = event_triples(ev, header=False)
            # the commit check's keep, which skips the loops of literals (checks, reasons,
            # ...) whole; and keeps that see some or all of them
            for keep in (core, KEEP, KEEP | looped):
                assert event_triples(ev, header=False, keep=keep) == [
                    t for t in whole if t.split(" ", 2)[1] in keep], ev.kind
                assert event_triples(ev, header=False, keep=keep, classes=CLASSES) == [
                    t for t in whole if _wanted(t, keep, CLASSES)], ev.kind
            kinds.add(ev.kind)
    assert {"proposal.received", "decision.made", "action.intent", "action.observed",
            "verification.recorded", "transition.committed", "run.outcome"} <= kinds
    with pytest.raises(ValueError):
        event_triples(ev, keep=KEEP)  # the header is never filtered
