"""A graph store's compressed answer is decoded within its bound, and a round of ``graph
follow`` reads small answers only.

Finding: an answer of the store was bounded (``MAX_ANSWER_BYTES``, 1 GiB, ``test_23``)
only after httpx had decoded each chunk *whole*. httpx asks for ``gzip, deflate, zstd``
(``zstandard`` is installed with it) and decodes what comes: 64 KB of zstd is 2 GiB of
spaces, decoded in one call (then copied), so one answer of 64 KB — from the store, a proxy,
or anyone on the plain-HTTP path — took the client to 4.1 GB of RSS and 14 s of CPU before
``answered more than 1073741824 bytes``. And the watermark and layout reads of every
round of ``graph follow`` (retried every ≤ 10 s), the digests, and the answers to its
updates were held to the same 1 GiB as an export: a 0.9 MB gzip stream answering the
watermark read cost 1.9 GB and 9 s, round after round (and in every command's catch-up,
and in ``Runtime.close``).

Now the body is read raw and decoded here, never past the room left (``zlib`` with
``max_length``): gzip and deflate, the encodings the client now asks for; any other is a
typed refusal, nothing decoded. The meta graph's reads and the answers to updates and
graph-store writes are bounded at ``SMALL_ANSWER_BYTES`` (64 KiB: a watermark is 20
bytes). Each is ``graph_bad_response``; the child's peak RSS grows by a few MB.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator

import pytest
import zstandard

from cradle_kg.errors import GraphResponseError
from cradle_kg.storage.graph_config import parse_setting, resolve
from cradle_kg.storage.sparql_http import SparqlHttpStore

from .sparql_target import answering, in_child

_HEAD = b'{"head":{"vars":["v"]},"results":{"bindings":['
_MIB = 1 << 20


def _gzip(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    spaces = b" " * _MIB
    return b"".join([packer.compress(_HEAD), *(packer.compress(spaces)
                                               for _ in range(size // _MIB)), packer.flush()])


def _zstd(size: int) -> bytes:
    packer = zstandard.ZstdCompressor(level=3).compressobj()
    spaces = b" " * _MIB
    return b"".join([packer.compress(_HEAD), *(packer.compress(spaces)
                                               for _ in range(size // _MIB)), packer.flush()])


def _store(body: bytes, encoding: str, seen: list[str]) -> Iterator[str]:
    with answering(body, "application/sparql-results+json", encoding=encoding,
                   seen=seen) as url:
        yield url


CHILD = r"""
import json, resource, sys
from cradle_kg.errors import CradleError
from cradle_kg.storage.graph import QuadBatch
from cradle_kg.errors import GraphResponseError
from cradle_kg.storage.graph_config import parse_setting, resolve
from cradle_kg.storage.sparql_http import SparqlHttpStore
store = SparqlHttpStore(resolve(parse_setting(sys.argv[1])))
batch = QuadBatch()
batch.add("<https://w3id.org/cradle/run/x>", ["<urn:a> <urn:b> <urn:c>"])
calls = {"watermark": store.projected_seq, "layout": store.layout,
         "apply": lambda: store.apply(batch, 5)}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    calls[sys.argv[2]]()
    said = None
except CradleError as exc:
    said = f"{exc.code}: {exc.message}"
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"said": said, "grown_mb": grown // 1024}))
"""


def _in_child(url: str, call: str) -> dict[str, object]:
    return in_child(CHILD, url, call)


@pytest.mark.parametrize(("encoding", "call"), [
    ("zstd", "watermark"),  # was 512 MiB decoded in one call, and copied: ~1 GB
    ("gzip", "watermark"),  # was 256 MiB read, then copied
    ("gzip", "layout"),
    ("gzip", "apply"),  # the answer to an update is a status line
])
def test_a_compressed_answer_is_decoded_within_its_bound(encoding: str, call: str) -> None:
    body = _zstd(512 * _MIB) if encoding == "zstd" else _gzip(256 * _MIB)
    assert len(body) < 300_000
    seen: list[str] = []
    for url in _store(body, encoding, seen):
        found = _in_child(url, call)
    said = str(found["said"])
    assert said.startswith("graph_bad_response"), found
    assert ("encoding not asked for" if encoding == "zstd"
            else "answered more than 65536 bytes") in said, said
    grown = found["grown_mb"]
    assert isinstance(grown, int) and grown < 48, found
    assert seen and all(s == "gzip, deflate" for s in seen), seen


def test_a_compressed_answer_within_its_bound_reads_as_before() -> None:
    rows = {"head": {"vars": ["v"]}, "results": {"bindings": [
        {"v": {"type": "literal", "value": "7",
               "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]}}
    for encoding, pack in (("gzip", zlib.MAX_WBITS | 16), ("deflate", zlib.MAX_WBITS)):
        packer = zlib.compressobj(6, zlib.DEFLATED, pack)
        body = packer.compress(json.dumps(rows).encode()) + packer.flush()
        for url in _store(body, encoding, []):
            store = SparqlHttpStore(resolve(parse_setting(url)))
            try:
                assert store.projected_seq() == 7
                assert store.tsv("SELECT ?v WHERE { GRAPH ?g { ?v ?p ?o } }") == b"?v\n7\n"
            finally:
                store.close()
    for url in _store(_gzip(4 * _MIB)[:-20], "gzip", []):  # cut short: no end, no answer
        store = SparqlHttpStore(resolve(parse_setting(url)))
        try:
            with pytest.raises(GraphResponseError, match=r"cut short|does not decompress"):
                store.tsv("SELECT ?v WHERE { GRAPH ?g { ?v ?p ?o } }")
        finally:
            store.close()
