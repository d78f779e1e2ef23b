"""The engine plumbing: input forms, union of named graphs, shapes loading, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import Dataset

from cradle_kg.errors import RdfParseError, ShapesError
from cradle_kg.graph.rdfio import read_rdf
from cradle_kg.graph.shacl import (
    DEFAULT_ENGINE,
    PyShaclEngine,
    RustShaclEngine,
    default_engine,
    load_shapes,
    make_engine,
    union_graph,
    validate,
)

FIXTURES = Path(__file__).parent / "fixtures"
C = "https://w3id.org/cradle#"
X = "https://example.org/"
DT = "^^<http://www.w3.org/2001/XMLSchema#dateTime>"

# rule 7 broken, written as N-Quads across two named graphs: the decision in one graph
# and the action in another, so the rule only fires on the union
SPLIT_NQUADS = f"""\
<{X}d> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{C}Decision> <{X}g1> .
<{X}d> <{C}verdict> <{C}Allow> <{X}g1> .
<{X}d> <{C}grantedTo> <{X}bot> <{X}g1> .
<{X}a> <{C}authorizedBy> <{X}d> <{X}g2> .
<{X}a> <{C}executedBy> <{X}mallory> <{X}g2> .
<{X}a> <{C}executedAt> "2025-03-01T10:00:00Z"{DT} <{X}g2> .
"""


@pytest.mark.parametrize("engine", ["rust", "pyshacl"])
def test_named_graphs_are_validated_as_their_union(engine: str) -> None:
    report = validate(SPLIT_NQUADS, engine=engine)
    assert [(v.rule, v.focus_node) for v in report.violations] == [(7, f"{X}a")]
    dataset = read_rdf(SPLIT_NQUADS, "nquads")
    assert len(list(dataset.graphs())) >= 2
    assert [(v.rule, v.focus_node) for v in validate(dataset, engine=engine).violations] == [
        (7, f"{X}a")
    ]


def test_union_graph_merges_every_graph() -> None:
    assert len(union_graph(SPLIT_NQUADS)) == 6


@pytest.mark.parametrize("fmt", ["nt", "turtle"])
def test_rust_reads_text_forms_directly(fmt: str, rust: RustShaclEngine) -> None:
    dataset = read_rdf(FIXTURES / "rule3_neg1.ttl")
    text = union_graph(dataset).serialize(format=fmt)
    assert rust.validate(text, format=fmt).rules() == {3}


def test_default_engine_is_measured_choice_and_built_once() -> None:
    assert DEFAULT_ENGINE == "rust"
    assert isinstance(default_engine(), RustShaclEngine)
    assert default_engine() is default_engine()


def test_unknown_engine_is_a_shapes_error() -> None:
    with pytest.raises(ShapesError, match="unknown SHACL engine `jena`"):
        make_engine("jena", load_shapes())


def test_bad_data_text_is_a_parse_error_with_line(rust: RustShaclEngine) -> None:
    bad = f"<{X}a> <{C}p> <{X}b> .\n<{X}a> <{C}p> .\n"
    with pytest.raises(RdfParseError) as info:
        rust.validate(bad, format="nt")
    assert info.value.line == 2


PACK_SHAPES = f"""\
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix cradle: <{C}> .
<{X}Rule9Shape> a sh:NodeShape ; cradle:ruleNumber 9 ;
    sh:targetClass cradle:Action ;
    sh:property [ sh:path cradle:riskLevel ; sh:minCount 1 ;
                  sh:message "pack: risk level required" ] .
"""


@pytest.mark.parametrize("engine_cls", [RustShaclEngine, PyShaclEngine])
def test_pack_shapes_add_numbered_rules(
    tmp_path: Path, engine_cls: type[RustShaclEngine] | type[PyShaclEngine]
) -> None:
    pack = tmp_path / "pack.ttl"
    pack.write_text(PACK_SHAPES, encoding="utf-8")
    engine = engine_cls(load_shapes([pack]))
    report = engine.validate(read_rdf(FIXTURES / "rule1_neg2.ttl"))
    assert {(v.rule, v.shape) for v in report.violations} == {
        (1, f"{C}Rule1Shape"),
        (9, f"{X}Rule9Shape"),
    }


def test_bad_shapes_file_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ttl"
    text = "@prefix sh: <http://www.w3.org/ns/shacl#> .\n\n<a> a sh:NodeShape ) .\n"
    bad.write_text(text, "utf-8")
    with pytest.raises(ShapesError, match=r"bad\.ttl:3"):
        load_shapes([bad])


def test_no_shapes_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.ttl"
    empty.write_text("<http://x/a> <http://x/b> <http://x/c> .\n", "utf-8")
    with pytest.raises(ShapesError, match="no shapes declared"):
        load_shapes([empty], builtin=False)


def test_rule_number_must_be_an_integer(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ttl"
    bad.write_text(PACK_SHAPES.replace("cradle:ruleNumber 9", 'cradle:ruleNumber "nine"'), "utf-8")
    with pytest.raises(ShapesError, match="is not an integer"):
        load_shapes([bad])


def test_shapes_rust_cannot_compile_are_a_shapes_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ttl"
    bad.write_text(
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n"
        '<http://x/S> a sh:NodeShape ; sh:targetClass <http://x/C> ; sh:minCount "many" .\n',
        "utf-8",
    )
    shapes = load_shapes([bad], builtin=False)
    with pytest.raises(ShapesError):
        RustShaclEngine(shapes)


def test_empty_dataset_conforms() -> None:
    assert validate(Dataset()).conforms is True


# --- a contract's shapes from Turtle text (read by pyoxigraph, not rdflib) -----------------

CONTRACT_SHAPE = """\
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix cradle: <https://w3id.org/cradle#> .
<https://example.org/S> a sh:NodeShape ; cradle:ruleNumber 12 ;
    sh:targetNode <urn:cradle:observed> ;
    sh:property _:p .
_:p sh:path <https://example.org/v> ; sh:minCount 1 ; sh:message "no value" .
"""


def test_contract_shapes_read_as_rdflib_reads_them() -> None:
    """Two texts: the same triples as rdflib's parser gives, each text's blank nodes its
    own (both say ``_:p``), the rule number read, and the rdflib graph built on demand."""
    from rdflib import Graph
    from rdflib.compare import to_isomorphic

    from cradle_kg.graph.shacl import shapes_from_turtle

    other = CONTRACT_SHAPE.replace("/S>", "/T>").replace("ruleNumber 12", "ruleNumber 13")
    shapes = shapes_from_turtle([CONTRACT_SHAPE, other])
    expected = Graph()
    for text in (CONTRACT_SHAPE, other):
        expected.parse(data=text, format="turtle")
    assert to_isomorphic(shapes.graph) == to_isomorphic(expected)
    assert len({t for t in shapes.ntriples.split() if t.startswith("_:")}) == 2
    assert shapes.rule_numbers == {"https://example.org/S": 12, "https://example.org/T": 13}
    # each blank property shape names its holder (how pySHACL's results find their root)
    assert sorted(map(str, shapes.parents.values())) == ["https://example.org/S",
                                                          "https://example.org/T"]
    report = RustShaclEngine(shapes).validate(
        "<urn:cradle:observed> <https://example.org/w> \"1\" .\n", format="nt")
    assert not report.conforms and report.rules() == {12, 13}


@pytest.mark.parametrize(("text", "error"), [
    ("this is not turtle", "cannot read shapes"),
    ("<https://example.org/a> <https://example.org/b> <https://example.org/c> .",
     "no shapes declared"),
    (CONTRACT_SHAPE.replace("ruleNumber 12", 'ruleNumber "twelve"'), "is not an integer"),
    (CONTRACT_SHAPE.replace("ruleNumber 12", "ruleNumber 1.5"), "is not an integer"),
    (CONTRACT_SHAPE.replace("ruleNumber 12", "ruleNumber true"), "is not an integer"),
])
def test_contract_shapes_that_cannot_be_read_are_a_shapes_error(text: str, error: str) -> None:
    from cradle_kg.graph.shacl import shapes_from_turtle

    with pytest.raises(ShapesError, match=error):
        shapes_from_turtle([text])
