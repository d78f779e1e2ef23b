"""Packs' knowledge in the graph store: ontologies and reference data, versioned.

Each loaded pack's ``ontology:`` files and its ``@knowledge`` declarations (reference data
generated at load time from the files the pack ships — HS 2022 as SKOS from its CSV) go
into named graphs of their own, ``https://w3id.org/cradle/pack/<id>/<version>/<name>``, so
a query joins a run to the domain knowledge it relied on, under the version then in force.

Cheap when nothing changed: each graph carries the digest of what it was built from (the
graph name and the bytes of its source files) in the meta graph; an install whose digest
matches does nothing — no file is parsed, no triple generated. A new version is a new
graph: the old one stays for the decisions made under it.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from ..errors import CradleError, InputError, ProjectionError, RdfParseError
from ..inputs import FILE_LIMITS, read_file
from ..storage.graph import KNOWLEDGE_BASE, GraphStore
from .iris import ID_BASE, RUN_BASE
from .packproj import Triple, well_formed
from .vocab import CRADLE_NS, RDF_NS

_CORE_TERM = "<" + CRADLE_NS
_CORE_OBJECTS = ("<" + ID_BASE, "<" + RUN_BASE)
_RDF_TYPE = f"<{RDF_NS}type>"


def not_knowledge(s: str, p: str, o: str) -> bool:
    """A triple (N-Triples terms) that no knowledge graph may hold: it states a ``cradle:``
    predicate, types something as a ``cradle:`` class, or names a core object or run graph.
    A pack's knowledge is domain terms (its classes may subclass ``cradle:`` ones); what it
    says otherwise would read as the runtime's own record in every query of the union
    default graph — an approval, a decision — and a graph no loaded pack builds is held
    to this rule alone by ``graph verify`` (``tests/security/test_540``)."""
    return (p.startswith(_CORE_TERM) or (p == _RDF_TYPE and o.startswith(_CORE_TERM))
            or s.startswith(_CORE_OBJECTS) or o.startswith(_CORE_OBJECTS))


def _refuse_foreign(graph: str, triples: Iterable[tuple[str, str, str]]) -> None:
    bad = next((t for t in triples if not_knowledge(*t)), None)
    if bad is not None:
        raise ProjectionError(f"knowledge graph `{graph}`: `{' '.join(bad)[:160]}` is not "
                              "domain knowledge (a cradle: predicate or class, or a core "
                              "object: the runtime's own record)")


def knowledge_graph(pack_id: str, version: str, name: str) -> str:
    return f"{KNOWLEDGE_BASE}{pack_id}/{version}/{name}"


@dataclass(frozen=True)
class KnowledgeSource:
    """One knowledge graph of one pack version: the files it is built from, and how."""

    graph: str
    files: tuple[Path, ...]
    #: N-Triples triples (generated), or None: the files are Turtle, loaded as they are
    build: Callable[[], Iterable[Triple]] | None = None
    #: Turtle files already read and parsed (:func:`turtle_source`): their text and
    #: digest, so an install parses nothing again
    parsed: tuple[str, str] | None = None

    def digest(self) -> str:
        if self.parsed is not None:
            return self.parsed[1]
        h = hashlib.sha256(self.graph.encode())
        for f in self.files:
            h.update(b"\0" + f.name.encode() + b"\0")
            h.update(_read(f))
        return "sha256:" + h.hexdigest()


def turtle_source(graph: str, files: Sequence[Path]) -> KnowledgeSource:
    """A graph of Turtle files, each read once and parsed now (an :class:`RdfParseError`
    naming the file and line when one does not), the text kept for the install."""
    h = hashlib.sha256(graph.encode())
    texts = []
    for f in files:
        data = _read(f)
        h.update(b"\0" + f.name.encode() + b"\0")
        h.update(data)
        texts.append(_parsed(data, f))
    return KnowledgeSource(graph, tuple(files), parsed=("\n".join(texts),
                                                      "sha256:" + h.hexdigest()))


def _read(path: Path) -> bytes:
    """A source file's bytes as every file of a pack is read: a regular file (a FIFO in
    its place would block the home's every open), bounded; else an :class:`RdfParseError`
    naming it."""
    try:
        return read_file(path, max_bytes=FILE_LIMITS.max_bytes)
    except InputError as exc:
        raise RdfParseError(exc.message.removeprefix(f"`{path}`: "), file=str(path)) from None


def _turtle(path: Path) -> str:
    """The text of a Turtle source, parsed once before the store is touched: one that is
    not UTF-8 or does not parse is an :class:`RdfParseError` naming the file and the line
    (before, pyoxigraph's ``SyntaxError`` or a ``UnicodeDecodeError`` escaped from the
    store's load, after it had emptied the graph: ``tests/security/test_275``)."""
    return _parsed(_read(path), path)


def _parsed(data: bytes, path: Path) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RdfParseError(f"not UTF-8 at byte {exc.start}", file=str(path)) from None
    try:  # read through, nothing kept; no base IRI, as the store loads it
        deque(ox.parse(text, format=ox.RdfFormat.TURTLE), maxlen=0)
    except SyntaxError as exc:
        raise RdfParseError(" ".join(str(exc).split()), file=str(path),
                            line=exc.lineno) from None
    return text


@dataclass(frozen=True)
class Staged:
    """A knowledge graph ready to be written: its digest and its body, built and checked."""

    graph: str
    digest: str
    body: str
    turtle: bool


def stage(store: GraphStore, sources: Sequence[KnowledgeSource]) -> list[Staged]:
    """Each source whose content changed, built and checked, nothing written: a graph that
    does not parse, a build that raises or yields a term that is not one is refused here
    (``Runtime.load_pack`` stages before it puts anything in force: test_522)."""
    out: list[Staged] = []
    for source in sources:
        digest = source.digest()
        if store.knowledge_digest(source.graph) == digest:
            continue
        if source.build is None:
            # several Turtle files: prefixes repeat harmlessly; each file is whole Turtle
            text = source.parsed[0] if source.parsed is not None else \
                "\n".join(_turtle(f) for f in source.files)
            _refuse_foreign(source.graph, ((str(q.subject), str(q.predicate), str(q.object))
                                           for q in ox.parse(text,
                                                             format=ox.RdfFormat.TURTLE)))
            out.append(Staged(source.graph, digest, text, turtle=True))
            continue
        try:
            triples = list(source.build())
        except CradleError:
            raise
        except Exception as exc:  # the pack's code: a typed error naming the graph
            raise ProjectionError(f"knowledge graph `{source.graph}`: its build raised "
                                  f"{type(exc).__name__}: {exc}") from exc
        bad = next((t for t in triples if not well_formed(t)), None)
        if bad is not None:
            raise ProjectionError(f"knowledge graph `{source.graph}`: `{str(bad)[:120]}` "
                                  "is not a triple of N-Triples terms")
        _refuse_foreign(source.graph, triples)
        out.append(Staged(source.graph, digest,
                          "".join(f"{s} {p} {o} .\n" for s, p, o in triples), turtle=False))
    return out


def write(store: GraphStore, staged: Sequence[Staged]) -> list[str]:
    """Write what :func:`stage` built; returns the graphs (re)installed."""
    for one in staged:
        store.install_knowledge(one.graph, one.digest, one.body, turtle=one.turtle)
    return [one.graph for one in staged]


def install(store: GraphStore, sources: Sequence[KnowledgeSource]) -> list[str]:
    """Install every source whose content changed; returns the graphs (re)installed."""
    return write(store, stage(store, sources))


__all__ = ["KnowledgeSource", "Staged", "install", "knowledge_graph", "not_knowledge", "stage",
           "turtle_source", "write"]
