"""The OWL reasoner of ``pack validate`` fetches nothing and imports no Python.

Finding: ``pack validate`` is the review of a pack not trusted yet — it "never executes
a pack's code … and fetches nothing" (the README; ``test_09`` and ``test_64`` check it, both
with ``--no-reasoner``). With the reasoner, the default whenever Java is installed, the
pack's ontology goes through owlready2 before HermiT, and owlready2's ``Ontology.load``
acts on two kinds of triple of the ontology it loads:

* ``owl:imports <IRI>``: each is downloaded with ``urlopen`` and no time limit — a request
  of the pack's choosing from the reviewer's machine (a cloud metadata address, an
  intranet service), a local file read (``file:///…``), a review that never ends on a
  server that never answers;
* ``<…owlready_ontology.owl#python_module> "name"``: the module so named is **imported**
  (``importlib.__import__``). Run as ``python -m cradle_kg`` from the folder holding the
  pack (the working folder is on ``sys.path``), ``"evilpack.payload"`` ran the pack's own
  Python in the review; any installed module's import side effects ran from anywhere.

The same held for ``cradle-kg ontology check --with FILE``. Now both kinds of triple — and
every other owlready2 annotation (its own namespace) — are taken out of the merged
ontology before owlready2 reads it: nothing is fetched or imported, HermiT checks the
files given, and each import not followed is a warning of ``pack validate``.

Real ``python -m cradle_kg pack validate`` processes (with the reasoner: Java is a
requirement of the suite), a real HTTP server on 127.0.0.1 counting requests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg.graph.owl import check_ontology
from cradle_kg.graph.vocab import ONTOLOGY_FILE

from .sparql_target import recording

CORE = "https://w3id.org/cradle"
PYTHON_MODULE = ("http://www.lesfleursdunormal.fr/static/_downloads/owlready_ontology.owl"
                 "#python_module")
#: an ontology owlready2 loads when it follows the import
IMPORTED = (b'<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-'
            b'syntax-ns#" xmlns:owl="http://www.w3.org/2002/07/owl#"><owl:Ontology '
            b'rdf:about="http://example.org/imported"/></rdf:RDF>')
#: a class of a local file that an import would read into the check
SECRET_CLASS = (b'<owl:Class rdf:about="http://example.org/secret-kept-here"><rdfs:subClassOf '
                b'xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#" '
                b'rdf:resource="http://example.org/Other"/></owl:Class>')


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 that records each request and answers an empty ontology."""
    with recording(IMPORTED, "application/rdf+xml") as found:
        yield found


def _pack(root: Path, turtle: str) -> Path:
    """``root/evilpack``: a pack of one ontology file, and a module that leaves a marker
    when it is imported."""
    folder = root / "evilpack"
    (folder / "ontology").mkdir(parents=True)
    (folder / "manifest.yaml").write_text(
        "id: evil.pack\nname: Evil\nversion: 1.0.0\ncore_ontology: '>=0.1.0'\n"
        "ontology:\n  - ontology/terms.ttl\n", encoding="utf-8")
    (folder / "ontology" / "terms.ttl").write_text(
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "<https://example.org/evil#Thing> a owl:Class .\n" + turtle, encoding="utf-8")
    (folder / "__init__.py").write_text("", encoding="utf-8")
    marker = root / "IMPORTED"
    (folder / "payload.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n", encoding="utf-8")
    return folder


def _validate(folder: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "cradle_kg", "pack", "validate",
                           folder.name, "--format", "json"], cwd=folder.parent,
                          capture_output=True, text=True, check=False, timeout=300)
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_pack_validate_follows_no_import(tmp_path: Path,
                                         listener: tuple[str, list[str]]) -> None:
    url, seen = listener
    folder = _pack(tmp_path, f"<{CORE}> owl:imports <{url}/core-import> .\n"
                             f"<https://example.org/evil> a owl:Ontology ;\n"
                             f"    owl:imports <{url}/pack-import> .\n")
    report = _validate(folder)
    assert seen == [], seen  # was ['/core-import']: the reviewer's machine asked for it
    assert report["ok"] is True, report
    warnings = json.dumps(report["warnings"])
    assert f"{url}/core-import" in warnings and "not followed" in warnings, report


def test_pack_validate_imports_no_module(tmp_path: Path) -> None:
    folder = _pack(tmp_path, f'<{CORE}> <{PYTHON_MODULE}> "evilpack.payload" .\n')
    report = _validate(folder)
    assert not (tmp_path / "IMPORTED").exists(), "the review ran the pack's Python"
    assert report["ok"] is True, report


def test_ontology_check_reads_a_local_file_named_by_an_import(tmp_path: Path) -> None:
    """``ontology check --with FILE`` on a file handed over: an import of a local file is
    not read (it was parsed as an ontology, its errors quoting it)."""
    secret = tmp_path / "secret.owl"
    secret.write_bytes(IMPORTED.replace(b"</rdf:RDF>", SECRET_CLASS + b"</rdf:RDF>"))
    extra = tmp_path / "extra.ttl"
    extra.write_text("@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
                     f"<{CORE}> owl:imports <{secret.as_uri()}> .\n", encoding="utf-8")
    report = check_ontology([ONTOLOGY_FILE, extra])
    assert report.consistent
    read = [pair for pair in report.hierarchy if "secret-kept-here" in pair[0]]
    assert read == [], read  # was: the local file's class, read into the check
    assert report.skipped_imports == [secret.as_uri()]
