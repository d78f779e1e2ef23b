"""customs.hs-router's reference data as SKOS, generated at load time from what it ships.

Nothing here is committed as Turtle: the runtime calls these when it installs the pack's
version into the graph store (named graphs ``…/pack/customs.hs-router/<version>/hs2022``
and ``…/dual-use``), and again only when the files change.

- ``hs2022``: the HS 2022 nomenclature from ``data/hs2022/*.csv`` — sections, chapters
  (2 digits), headings (4), subheadings (6, notation ``dddd.dd`` as the pack writes codes),
  each a ``skos:Concept`` in one scheme, ``skos:broader`` its parent, ``skos:notation``,
  ``skos:prefLabel``, and the validity of the edition (``customs:validFrom``, from the
  pack's legal source ``WCO:HS2022``);
- ``dual-use``: the Annex I entries the pack ships (``data/eu-dual-use``), as concepts of
  the consolidated version's scheme, valid from its consolidation date.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from cradle_kg.packs.sdk import Triple, iri, knowledge, literal

CUSTOMS = "https://w3id.org/cradle/pack/customs#"
SKOS = "http://www.w3.org/2004/02/skos/core#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
XSD_DATE = "http://www.w3.org/2001/XMLSchema#date"
HS = "https://w3id.org/cradle/pack/customs/hs2022/"
DUAL_USE = "https://w3id.org/cradle/pack/customs/dual-use/"
HS_FILES = ("data/hs2022/harmonized-system.csv", "data/hs2022/sections.csv",
            "data/legal_sources.json")
DUAL_USE_FILES = ("data/eu-dual-use/annex_i_uav_excerpt.json", "data/legal_sources.json")
_KIND = {"2": "HSChapter", "4": "HSHeading", "6": "HSSubheading"}


def _s(term: str) -> str:
    return iri(SKOS + term)


def _valid_from(folder: Path, source_id: str) -> str:
    sources = json.loads((folder / "data" / "legal_sources.json").read_text(encoding="utf-8"))
    return str(next(s["valid_from"] for s in sources["sources"] if s["id"] == source_id))


def _concept(node: str, scheme: str, notation: str, label: str, valid: str) -> Iterator[Triple]:
    yield (node, iri(RDF_TYPE), _s("Concept"))
    yield (node, _s("inScheme"), scheme)
    yield (node, _s("notation"), literal(notation))
    yield (node, _s("prefLabel"), literal(label))
    yield (node, iri(CUSTOMS + "validFrom"), literal(valid, XSD_DATE))


def notation(code: str) -> str:
    return f"{code[:4]}.{code[4:]}" if len(code) == 6 else code


@knowledge("hs2022", files=HS_FILES)
def hs2022(folder: Path) -> Iterable[Triple]:
    valid = _valid_from(folder, "WCO:HS2022")
    scheme = iri(HS.rstrip("/"))
    yield (scheme, iri(RDF_TYPE), _s("ConceptScheme"))
    yield (scheme, _s("prefLabel"), literal("Harmonized System nomenclature, 2022 edition"))
    yield (scheme, iri(CUSTOMS + "validFrom"), literal(valid, XSD_DATE))
    root = folder / "data" / "hs2022"
    with (root / "sections.csv").open(encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f):
            s = iri(HS + "section/" + row["section"])
            yield from _concept(s, scheme, row["section"], row["name"], valid)
            yield (s, iri(RDF_TYPE), iri(CUSTOMS + "HSSection"))
            yield (scheme, _s("hasTopConcept"), s)
    with (root / "harmonized-system.csv").open(encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f):
            kind = _KIND.get(row["level"])
            if kind is None:  # the TOTAL row
                continue
            code = row["hscode"]
            c = iri(HS + code)
            yield from _concept(c, scheme, notation(code), row["description"], valid)
            yield (c, iri(RDF_TYPE), iri(CUSTOMS + kind))
            broader = (HS + "section/" + row["section"]) if kind == "HSChapter" else (
                HS + row["parent"])
            yield (c, _s("broader"), iri(broader))


@knowledge("dual-use", files=DUAL_USE_FILES)
def dual_use(folder: Path) -> Iterable[Triple]:
    data = json.loads((folder / "data" / "eu-dual-use" / "annex_i_uav_excerpt.json")
                      .read_text(encoding="utf-8"))
    version = str(data["metadata"]["version"])
    valid = str(data["metadata"]["consolidation_date"])
    scheme = iri(DUAL_USE.rstrip("/"))
    yield (scheme, iri(RDF_TYPE), _s("ConceptScheme"))
    yield (scheme, _s("prefLabel"), literal(f"{data['metadata']['source']}, version {version}"))
    yield (scheme, iri(CUSTOMS + "validFrom"), literal(valid, XSD_DATE))
    yield (scheme, iri(CUSTOMS + "sourceId"), literal(f"EU-2021/821:AnnexI@{version}"))
    for entry in data["entries"]:
        c = iri(DUAL_USE + str(entry["code"]))
        yield from _concept(c, scheme, str(entry["code"]), str(entry["label"]), valid)
        yield (c, iri(RDF_TYPE), iri(CUSTOMS + "DualUseEntry"))
        yield (scheme, _s("hasTopConcept"), c)
