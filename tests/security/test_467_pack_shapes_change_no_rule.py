"""A pack's shapes add shapes of their own; they never switch an integrity rule off.

Finding (the twenty-fourth review, SHACL): a pack's ``shapes:`` files are merged into one
shapes graph with the integrity rules — at the commit check, in ``validate --pack`` — and
nothing kept them from stating things about the core's own shape nodes. One line,
``cradle:Rule1Shape sh:deactivated true .``, turned rule 1 off on both engines; a second
``cradle`` prefix declared on ``cradle:`` (``cradle: sh:declare [ sh:prefix "cradle" ;
sh:namespace "https://w3id.org/cradle/" ]`` — a slash for the ``#``, the typo of a pack
author declaring the prefixes of its own constraints) silently turned off rules 2, 7 and
8 on the Rust engine, the one the commit check runs, their SPARQL reading another
namespace. ``pack validate`` (the review of a pack not trusted yet) said ``valid``, and a
home listing the pack opened and committed with the rules off.

Now a shapes file read beside the built-in shapes may state nothing about a term of the
core vocabulary (a subject in ``https://w3id.org/cradle#``, ``cradle:`` itself included):
``load_shapes`` raises a :class:`ShapesError` naming the file and the term, ``pack
validate`` says invalid, and a home listing the pack does not open (one ``error:`` line,
exit 2). A pack's own shapes, and the prefixes it declares on its own nodes (as the
shipped packs do), load as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.errors import ShapesError
from cradle_kg.graph.rdfio import read_rdf
from cradle_kg.graph.shacl import RustShaclEngine, load_shapes
from cradle_kg.graph.vocab import INTEGRITY_SHAPES_FILE
from cradle_kg.packs.registry import BUILTIN_PACKS

from .malformed import door_refuses, home_with_pack, review_refuses

FIXTURES = Path(__file__).parents[1] / "graph" / "fixtures"
HEAD = """@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix cradle: <https://w3id.org/cradle#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix : <https://example.org/acme#> .
:ThingShape a sh:NodeShape ; sh:targetClass :Thing ;
  sh:property [ sh:path :size ; sh:datatype xsd:integer ; sh:maxCount 1 ] .
"""
#: (what a pack's shapes add, the rule it switched off, a fixture breaking that rule)
EDITS = {
    "deactivated": ("cradle:Rule1Shape sh:deactivated true .\n", 1, "rule1_neg1.ttl"),
    "prefix": ('cradle: sh:declare [ sh:prefix "cradle" ; '
               'sh:namespace "https://w3id.org/cradle/"^^xsd:anyURI ] .\n', 7,
               "rule7_neg1.ttl"),
    "structure": ("cradle:DateTimeValue sh:deactivated true .\n", None, None),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_load_refuses_shapes_about_the_core(tmp_path: Path, edit: str) -> None:
    text, rule, fixture = EDITS[edit]
    shapes = tmp_path / "shapes.ttl"
    shapes.write_text(HEAD + text, encoding="utf-8")
    for load in (lambda: load_shapes([shapes]),  # validate --pack, pack validate
                 lambda: load_shapes([INTEGRITY_SHAPES_FILE, shapes], builtin=False)):
        try:
            loaded = load()
        except ShapesError as exc:
            assert "shapes.ttl" in exc.message and "cradle#" in exc.message, exc.message
            continue
        # before: loaded, and the rule no longer reported what breaks it
        if rule is not None:
            report = RustShaclEngine(loaded).validate(read_rdf(FIXTURES / str(fixture)))
            assert rule in report.rules(), report.to_text()
        pytest.fail(f"shapes stating `{text.strip()}` were loaded")


def test_pack_validate_says_invalid(tmp_path: Path) -> None:
    _, folder = home_with_pack(tmp_path / "home")
    (folder / "shapes.ttl").write_text(HEAD + EDITS["prefix"][0], encoding="utf-8")
    review_refuses(folder, "shapes.ttl", "cradle#")  # before: valid, exit 0


def test_a_home_listing_the_pack_does_not_open(tmp_path: Path) -> None:
    home, folder = home_with_pack(tmp_path / "home")
    (folder / "shapes.ttl").write_text(HEAD + EDITS["deactivated"][0], encoding="utf-8")
    # before: the credit was decided and committed with rule 1 off
    door_refuses("--home", str(home), needle="shapes.ttl", proposal=tmp_path / "p.json")


def test_own_shapes_and_prefixes_still_load() -> None:
    files = sorted(BUILTIN_PACKS.glob("*/shapes/*.ttl"))
    assert len(files) >= 3
    loaded = load_shapes(files)  # each declares `cradle` on its own node
    report = RustShaclEngine(loaded).validate(read_rdf(FIXTURES / "rule7_neg1.ttl"))
    assert 7 in report.rules()
