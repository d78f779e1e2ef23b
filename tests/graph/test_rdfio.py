"""read_rdf: every format in, named graphs kept, and parse errors that say where."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import URIRef

from cradle_kg.errors import RdfParseError
from cradle_kg.graph.rdfio import read_rdf

A, B, C, G = "http://ex/a", "http://ex/b", "http://ex/c", "http://ex/g"

GOOD = {
    "x.ttl": "@prefix ex: <http://ex/> .\nex:a ex:b ex:c .\n",
    "x.trig": "@prefix ex: <http://ex/> .\nex:g { ex:a ex:b ex:c . }\n",
    "x.nt": f"<{A}> <{B}> <{C}> .\n",
    "x.nq": f"<{A}> <{B}> <{C}> <{G}> .\n",
    "x.jsonld": f'{{"@id": "{A}", "@graph": [{{"@id": "{A}", "{B}": {{"@id": "{C}"}}}}]}}',
}

# (file name, text, the 1-based line the error is on)
BAD = [
    ("bad.ttl", "@prefix ex: <http://ex/> .\nex:a ex:b ex:c .\nex:a ex:b ex:c ex:d .\n", 3),
    ("bad.trig", "@prefix ex: <http://ex/> .\nex:g {\n  ex:a ex:b ex:c .\n  ex:a ex:b .\n}\n", 4),
    ("bad.nt", f"<{A}> <{B}> <{C}> .\n\n# comment\n<{A}> <{B}> .\n", 4),
    ("bad.nq", f'<{A}> <{B}> <{C}> <{G}> .\n<{A}> <{B}> "open <{G}> .\n', 2),
    ("bad.jsonld", f'{{\n  "@id": "{A}",\n  "{B}": [\n}}\n', 4),
]


@pytest.mark.parametrize("name", sorted(GOOD))
def test_each_format_reads_from_its_extension(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(GOOD[name], encoding="utf-8")
    ds = read_rdf(path)
    assert (URIRef(A), URIRef(B), URIRef(C)) in {q[:3] for q in ds.quads((None, None, None, None))}
    assert len(read_rdf(str(path))) == len(ds)  # a str naming a file is a path too


@pytest.mark.parametrize("name", ["x.trig", "x.nq", "x.jsonld"])
def test_named_graphs_are_kept(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(GOOD[name], encoding="utf-8")
    graphs = {str(q[3]) for q in read_rdf(path).quads((None, None, None, None))}
    assert graphs == {G if name != "x.jsonld" else A}


@pytest.mark.parametrize(("name", "text", "line"), BAD, ids=[b[0] for b in BAD])
def test_parse_errors_carry_file_and_line(tmp_path: Path, name: str, text: str, line: int) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RdfParseError) as info:
        read_rdf(path)
    err = info.value
    assert err.file == str(path)
    assert err.line == line
    assert err.message.startswith(f"{path}:{line}: ")
    assert "\n" not in err.message


def test_text_input_defaults_to_trig_and_needs_format_for_nquads() -> None:
    assert len(read_rdf(GOOD["x.ttl"])) == 1
    assert len(list(read_rdf(GOOD["x.nq"], "nquads").quads((None, None, None, None)))) == 1
    with pytest.raises(RdfParseError) as info:
        read_rdf(BAD[0][1])
    assert info.value.file is None and info.value.line == 3


def test_unknown_extension_and_format_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "x.rdfx"
    path.write_text("", encoding="utf-8")
    with pytest.raises(RdfParseError, match="cannot tell the RDF format"):
        read_rdf(path)
    with pytest.raises(RdfParseError, match="unknown RDF format `n3x`"):
        read_rdf("<a> <b> <c> .", "n3x")
