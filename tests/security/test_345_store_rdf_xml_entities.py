"""A graph store's RDF answer is read only in the formats the client asked for.

Finding: an RDF answer of the remote store — a graph-store ``GET`` of ``export`` (and
``serve``'s start, ``validate``), a ``CONSTRUCT`` of ``query`` — was parsed in whatever
format its ``Content-Type`` named (``RdfFormat.from_media_type``), though the client asks
for N-Triples or Turtle only. ``application/rdf+xml`` is XML, and pyoxigraph's RDF/XML
reader expands the entities a document declares in its DTD: a "billion laughs" of 700
bytes — well under every bound of the answer (``test_23``, ``test_83``) — is a literal of
640 MB, 2 GB of the client's memory and 2.5 s of CPU, one more level ten times that. The
store, a proxy, or anyone on the plain-HTTP path to it took ``cradle-kg export`` (and
``graph follow``'s neighbours on the machine) out of memory.

Now an RDF answer in any format but N-Triples or Turtle (an unknown type is read as
N-Triples, as before) is ``graph_bad_response`` naming the type, before a byte of it is
parsed. A real HTTP server on 127.0.0.1 answers; the client runs in a child process whose
peak memory is measured.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cradle_kg.errors import GraphResponseError
from cradle_kg.storage.graph_config import parse_setting, resolve
from cradle_kg.storage.sparql_http import SparqlHttpStore

from .sparql_target import answering, in_child

#: 64 bytes repeated 10**LEVELS times once the entities are expanded
LEVELS = 6


def bomb(levels: int = LEVELS) -> bytes:
    """RDF/XML of under a kilobyte whose one literal is 64 * 10**levels bytes."""
    ents = ['<!ENTITY a0 "' + "A" * 64 + '">']
    ents += [f'<!ENTITY a{i} "' + f"&a{i - 1};" * 10 + '">' for i in range(1, levels + 1)]
    return (f'<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [ {" ".join(ents)} ]>\n'
            '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
            'xmlns:ex="http://example.org/"><rdf:Description rdf:about="http://example.org/s">'
            f'<ex:p>&a{levels};</ex:p></rdf:Description></rdf:RDF>').encode()


def _store(media: str, body: bytes) -> Iterator[str]:
    """A store answering ``body`` as ``media`` to every request."""
    with answering(body, media) as url:
        yield url


CHILD = r"""
import json, resource, sys
from cradle_kg.errors import CradleError
from cradle_kg.storage.graph_config import parse_setting, resolve
from cradle_kg.storage.sparql_http import SparqlHttpStore
store = SparqlHttpStore(resolve(parse_setting(sys.argv[1])))
# a query reads the layout before and after it (test_541): the store at its layout, so
# that the CONSTRUCT's own answer is what is read
store.layout = lambda: 5
store._state = lambda: (1, 5)
calls = {"export": lambda: store.nquads(graphs=["https://w3id.org/cradle/run/r"]),
         "construct": lambda: list(store.query("CONSTRUCT WHERE { ?s ?p ?o }",
                                               default_graph=[], named_graphs=[]))}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    found = calls[sys.argv[2]]()
    said = f"read {len(str(found))} characters"
except CradleError as exc:
    said = f"{exc.code}: {exc.message}"
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"said": said, "grown_mb": grown // 1024}))
"""


@pytest.mark.parametrize("call", ["export", "construct"])
def test_an_rdf_xml_answer_is_refused_unparsed(call: str) -> None:
    body = bomb()
    assert len(body) < 1000
    for url in _store("application/rdf+xml", body):
        found = in_child(CHILD, url, call)
    said = str(found["said"])
    assert said.startswith("graph_bad_response"), found  # was: read 64,000,000 characters
    assert "application/rdf+xml" in said and "not asked for" in said, said
    grown = found["grown_mb"]
    assert isinstance(grown, int) and grown < 32, found


@pytest.mark.parametrize("media", ["application/ld+json", "text/n3", "application/trig"])
def test_other_rdf_formats_are_refused(media: str) -> None:
    for url in _store(media, b'{"@id": "http://example.org/s"}'):
        store = SparqlHttpStore(resolve(parse_setting(url)))
        try:
            with pytest.raises(GraphResponseError, match="not asked for"):
                store.nquads(graphs=["https://w3id.org/cradle/run/r"])
        finally:
            store.close()


@pytest.mark.parametrize(("media", "body"), [
    ("application/n-triples", b"<http://e/s> <http://e/p> \"v\" .\n"),
    ("text/turtle", b"@prefix e: <http://e/> . e:s e:p \"v\" .\n"),
    ("text/plain", b"<http://e/s> <http://e/p> \"v\" .\n"),  # older stores' N-Triples
])
def test_what_the_client_asks_for_reads_as_before(media: str, body: bytes) -> None:
    for url in _store(media, body):
        store = SparqlHttpStore(resolve(parse_setting(url)))
        try:
            got = store.nquads(graphs=["https://w3id.org/cradle/run/r"])
        finally:
            store.close()
    assert got == '<http://e/s> <http://e/p> "v" <https://w3id.org/cradle/run/r> .\n'
