"""JSON-LD is read with its context written inline: nothing is fetched, no file is opened.

Finding: ``cradle-kg pack validate`` is the review step for a pack not trusted yet (the
README: "never executes a pack's code … run it before enabling a pack you do not know").
A pack's ontology or shapes may be JSON-LD (``.jsonld``), and rdflib's JSON-LD reader
fetches every context a document *names* — ``"@context": "http://…"``, in a list, in a
term's scoped context, through ``"@import"``, or a path resolved against the file —
with ``urlopen`` and no time limit. So validating a hostile pack:

* sent this machine's requests where the pack chose (``http://127.0.0.1:…``, a cloud
  metadata address, an intranet service: a GET the reviewer never sees), and put the
  answer's status in the report;
* read local files outside the pack (``file:///…``, ``../../x.json``), whose content then
  shaped the triples;
* hung for ever on a server that accepts and never answers (the review never ends);

and ``cradle-kg validate FILE.jsonld`` did the same with any JSON-LD file it was handed.
A key given twice in a JSON-LD document was also read last-wins (what a reviewer reads
first is not what is loaded).

Now JSON-LD goes through the runtime's strict loader first (a key twice, ``NaN``, too deep:
refused) and a document that names a context to fetch (a string where ``@context`` is
written, or ``@import``) is refused in one line naming it: ``pack validate`` says INVALID
at once and no request leaves the process. An inline context is read as before.

A real HTTP server on 127.0.0.1 counts what reaches it; the real command line.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rdflib import URIRef

from cradle_kg.errors import RdfParseError
from cradle_kg.graph.rdfio import read_rdf

from .sparql_target import recording

A, B, C, D = "http://ex/a", "http://ex/b", "http://ex/c", "http://ex/d"


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 that records every request and answers a JSON-LD context."""
    with recording(json.dumps({"@context": {"b": B}}).encode(), "application/ld+json") as found:
        yield found


@pytest.fixture
def silent() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


def _pack(root: Path, document: object) -> Path:
    (root / "ontology").mkdir(parents=True)
    (root / "manifest.yaml").write_text(
        "id: hostile.jsonld\nname: Hostile\nversion: 1.0.0\ncore_ontology: '>=0.1.0'\n"
        "ontology:\n  - ontology/terms.jsonld\n", encoding="utf-8")
    text = document if isinstance(document, str) else json.dumps(document)
    (root / "ontology" / "terms.jsonld").write_text(text, encoding="utf-8")
    return root


def _validate(folder: Path, *, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cradle_kg", "pack", "validate", str(folder),
                           "--no-reasoner", "--format", "json"], capture_output=True,
                          text=True, check=False, timeout=timeout)


def _named(url: str) -> list[object]:
    """Documents that each name ``url`` as a context to fetch, in each place JSON-LD allows."""
    node = {"@id": A, "b": {"@id": C}}
    return [
        {"@context": url, **node},
        {"@context": [{"x": D}, url], **node},
        {"@context": {"t": {"@id": B, "@context": url}}, "@id": A, "t": {"@id": C}},
        {"@context": {"@import": url, "b": B}, **node},
        {"@graph": [{"@context": url, **node}]},
    ]


@pytest.mark.parametrize("case", range(5), ids=["plain", "list", "scoped", "import", "nested"])
def test_pack_validate_fetches_nothing(tmp_path: Path, listener: tuple[str, list[str]],
                                       case: int) -> None:
    url, seen = listener
    folder = _pack(tmp_path / "pack", _named(url + f"/ctx-{case}")[case])
    done = _validate(folder)
    assert seen == []  # before: a GET of /ctx-N from the reviewer's machine
    report = json.loads(done.stdout)
    assert report["ok"] is False, report
    assert "fetches nothing" in json.dumps(report)


def test_a_silent_server_does_not_hang_the_review(tmp_path: Path, silent: str) -> None:
    folder = _pack(tmp_path / "pack", {"@context": silent + "/ctx", "@id": A})
    done = _validate(folder, timeout=30)  # before: TimeoutExpired (it waited for ever)
    assert json.loads(done.stdout)["ok"] is False


def test_no_local_file_is_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"@context": {"b": B}}), encoding="utf-8")
    doc = tmp_path / "data" / "x.jsonld"
    doc.parent.mkdir()
    for context in (outside.as_uri(), "../outside.json"):
        doc.write_text(json.dumps({"@context": context, "@id": A, "b": {"@id": C}}),
                       encoding="utf-8")
        # before: the file outside was read, and its term made the triple <a> <b> <c>
        with pytest.raises(RdfParseError, match="fetches nothing"):
            read_rdf(doc)


def test_the_cli_validate_fetches_nothing(tmp_path: Path,
                                          listener: tuple[str, list[str]]) -> None:
    url, seen = listener
    doc = tmp_path / "x.jsonld"
    doc.write_text(json.dumps({"@context": url + "/v", "@id": A}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "cradle_kg", "validate", str(doc)],
                          capture_output=True, text=True, check=False, timeout=60)
    assert seen == [] and done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error:") and "Traceback" not in done.stderr


def test_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "x.jsonld"
    doc.write_text(f'{{"@id": "{A}", "{B}": {{"@id": "{C}"}}, "{B}": {{"@id": "{D}"}}}}',
                   encoding="utf-8")
    with pytest.raises(RdfParseError, match=r"twice|duplicate"):  # before: <a> <b> <d> only
        read_rdf(doc)


def test_an_inline_context_reads_as_before(tmp_path: Path) -> None:
    doc = tmp_path / "x.jsonld"
    doc.write_text(json.dumps({"@context": {"b": {"@id": B, "@type": "@id"}},
                               "@id": A, "b": C}), encoding="utf-8")
    triples = {q[:3] for q in read_rdf(doc).quads((None, None, None, None))}
    assert triples == {(URIRef(A), URIRef(B), URIRef(C))}
    folder = _pack(tmp_path / "pack", {"@context": {"b": B}, "@id": A, "b": "x"})
    assert json.loads(_validate(folder).stdout)["ok"] is True
