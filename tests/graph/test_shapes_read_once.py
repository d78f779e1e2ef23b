"""``load_shapes`` reads a file once per process for the same bytes at the same place.

Every runtime reads the integrity rules and its packs' shapes; parsing them with rdflib was
~20 ms of each runtime's start. Kept by path and content: a file changed in place is read
again, a file that does not parse is never kept, and each caller gets shapes of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib.compare import isomorphic

from cradle_kg.errors import ShapesError
from cradle_kg.graph import shacl
from cradle_kg.graph.shacl import load_shapes

SHAPE = """@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <http://example.org/> .
@prefix cradle: <https://w3id.org/cradle#> .
ex:S a sh:NodeShape ; cradle:ruleNumber {n} ; sh:targetClass ex:T ;
    sh:property [ sh:path ex:p ; sh:minCount 1 ] .
"""


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the files were parsed (one entry a parse)."""
    calls: list[int] = []
    real = shacl._read_files  # pyoxigraph's read, or rdflib's (read_union) when it refuses

    def counted(files):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(files)

    monkeypatch.setattr(shacl, "_read_files", counted)
    return calls


def test_the_same_files_are_parsed_once_and_each_caller_gets_its_own(
        tmp_path: Path, parses: list[int]) -> None:
    f = tmp_path / "s.ttl"
    f.write_text(SHAPE.replace("{n}", "41"))
    first = load_shapes([f], builtin=False)
    second = load_shapes([f], builtin=False)
    assert len(parses) == 1
    assert second.ntriples == first.ntriples and second.files == first.files
    assert second.rule_numbers == first.rule_numbers == {"http://example.org/S": 41}
    assert second is not first and second.rule_numbers is not first.rule_numbers
    assert isomorphic(second.graph, first.graph) and second.graph is not first.graph
    # with the built-in files: another key
    load_shapes([f])
    assert len(parses) == 2


def test_a_file_changed_in_place_is_read_again(tmp_path: Path, parses: list[int]) -> None:
    f = tmp_path / "s.ttl"
    f.write_text(SHAPE.replace("{n}", "41"))
    assert load_shapes([f], builtin=False).rule_numbers["http://example.org/S"] == 41
    f.write_text(SHAPE.replace("{n}", "42"))
    assert load_shapes([f], builtin=False).rule_numbers["http://example.org/S"] == 42
    assert len(parses) == 2


def test_a_file_that_does_not_parse_is_never_kept(tmp_path: Path, parses: list[int]) -> None:
    f = tmp_path / "s.ttl"
    f.write_text("this is not turtle .")
    for _ in range(2):
        with pytest.raises(ShapesError, match="cannot load shapes"):
            load_shapes([f], builtin=False)
    no_shape = tmp_path / "n.ttl"
    no_shape.write_text("<http://example.org/a> <http://example.org/b> 1 .\n")
    for _ in range(2):
        with pytest.raises(ShapesError, match="no shapes declared"):
            load_shapes([no_shape], builtin=False)
    assert len(parses) == 4
    f.write_text(SHAPE.replace("{n}", "7"))
    assert load_shapes([f], builtin=False).rule_numbers["http://example.org/S"] == 7


def test_a_missing_file_is_the_parser_s_error(tmp_path: Path) -> None:
    with pytest.raises(ShapesError):
        load_shapes([tmp_path / "absent.ttl"])


def test_the_kept_shapes_are_bounded(tmp_path: Path, parses: list[int]) -> None:
    files = []
    for i in range(shacl._READ_LIMIT + 1):
        f = tmp_path / f"s{i}.ttl"
        f.write_text(SHAPE.replace("{n}", str(i)))
        files.append(f)
        load_shapes([f], builtin=False)
    assert len(shacl._READ) <= shacl._READ_LIMIT
    load_shapes([files[0]], builtin=False)  # the oldest was dropped: read again
    assert len(parses) == shacl._READ_LIMIT + 2
