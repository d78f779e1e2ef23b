"""A remote graph store over the standard protocols (httpx): SPARQL 1.1 Query, SPARQL 1.1
Update and the SPARQL 1.1 Graph Store HTTP Protocol — Oxigraph server, Fuseki, GraphDB,
Virtuoso, Neptune. Plain SPARQL 1.1 only (no engine's extensions):

* **apply**: one ``POST`` of ``application/sparql-update`` holding the batch's
  ``INSERT DATA`` / ``DELETE DATA`` operations *and* the watermark's update, so the store
  applies them in one request — a crash leaves the batch wholly in or out (a batch of
  more than ``_APPLY_BYTES`` goes in several requests, the watermark in the last: a crash
  between them leaves it behind, and the replay is a no-op for what was applied);
* **query**: ``POST`` of ``application/x-www-form-urlencoded`` ``query=``; the union
  default graph (which SPARQL 1.1 has no switch for) is asked for by naming every graph
  of the store as a ``default-graph-uri``; bound parameters become a ``VALUES`` block at
  the head of the query's WHERE group, RDF terms written by pyoxigraph (never text spliced
  from the user); results come back as SPARQL JSON (or N-Triples for CONSTRUCT) and are
  read into pyoxigraph's result types, so callers see one kind of result;
* **export, knowledge, rebuild**: the Graph Store HTTP Protocol (``GET`` / ``PUT`` /
  ``POST`` of ``application/n-triples`` on ``?graph=IRI``).

Every failure is a typed error (:mod:`cradle_kg.errors`): unreachable, auth refused,
timeout, a malformed or error answer — never a traceback. An answer is bounded: at most
:data:`MAX_ANSWER_BYTES` (decoded), in full within :data:`ANSWER_TIMEOUTS` times ``timeout_s``
of the request, its headers included (httpx's own timeout is per read: a store that sends a
byte at a time would otherwise hold the caller for ever; ``tests/security/test_611``).
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pyoxigraph as ox

from ..environment_proxies import EnvironmentTransport, deadline, url_origin
from ..errors import (
    GraphAnswerTooLargeError,
    GraphAuthError,
    GraphResponseError,
    GraphStoreError,
    GraphTimeoutError,
    GraphUnreachableError,
    QueryError,
)
from ..tls import tls_context
from .graph import (
    DIGEST,
    JOURNAL,
    MAX_EXPORT_BYTES,
    META_GRAPH,
    SEQ,
    VERSION,
    QuadBatch,
    QueryResult,
    Term,
    check_knowledge_name,
    export_too_large,
    meta_number,
    meta_replace,
    meta_text,
    rebuilding_mark,
    split_graphs,
    watermark_update,
)
from .graph_config import RemoteGraph
from .sparql_terms import DATETIME, canonical_json, canonical_term
from .sparql_values import query_form, with_now, with_values

#: the IRIs of cradle-kg's graphs (run, shared, meta, knowledge)
OUR_GRAPHS = "https://w3id.org/cradle/"

_RESULTS_JSON = "application/sparql-results+json"
_NTRIPLES = "application/n-triples"
_ACCEPT_ANY = f"{_RESULTS_JSON}, {_NTRIPLES};q=0.9, text/turtle;q=0.8"
_ACCEPT_RDF = f"{_NTRIPLES}, text/turtle;q=0.8"
_ACCEPT_ENCODING = "gzip, deflate"
#: the RDF formats an answer is read in: what the client asks for
_RDF_ASKED = (ox.RdfFormat.N_TRIPLES, ox.RdfFormat.TURTLE)
#: the most SPARQL Update text sent in one request of a projection batch
_APPLY_BYTES = 400_000
#: N-Triples per graph-store POST while rebuilding
_LOAD_CHUNK = 200_000
#: the most bytes of one answer of the store (a graph exported whole included)
MAX_ANSWER_BYTES = 1 << 30
#: the most bytes of an answer that carries a few terms or a status line: the meta graph's
#: watermark, layout and digests, and what an update or a graph-store write answers — the
#: reads and writes of every round of ``graph follow`` (tests/security/test_83)
SMALL_ANSWER_BYTES = 1 << 16
#: an answer arrives whole within this many ``timeout_s`` of its request (test_611)
ANSWER_TIMEOUTS = 10
#: headers that described the body as it came over the wire, not as it is read
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class SparqlHttpStore:
    """:class:`~.graph.GraphStore` on a remote SPARQL 1.1 store."""

    def __init__(self, remote: RemoteGraph, *, client: httpx.Client | None = None) -> None:
        self.remote = remote
        self.local_path: Path | None = None
        #: ((watermark, layout), graph names) of the last listing
        self._names: tuple[tuple[int, int], list[str]] | None = None
        #: the journal the store projects, as last read or written (test_80)
        self._journal: str | None = None
        auth: httpx.Auth | None = None
        headers: dict[str, str] = {}
        if remote.bearer:
            headers["Authorization"] = f"Bearer {remote.bearer}"
        elif remote.basic:
            auth = httpx.BasicAuth(*remote.basic)
        # the encodings :func:`_decoder` reads with a bound (httpx would ask for zstd too)
        headers["Accept-Encoding"] = _ACCEPT_ENCODING
        # a loopback store is never proxied, whatever the environment names (test_401)
        self.client = client or httpx.Client(
            timeout=remote.timeout_s, auth=auth, headers=headers,
            verify=tls_context(), transport=EnvironmentTransport(verify=tls_context()))

    def describe(self) -> str:
        """The store as shown: its origin (:func:`url_origin`, as in every error)."""
        return url_origin(self.remote.query)

    # --- HTTP, with typed errors --------------------------------------------------

    def _send(self, method: str, url: str, *, limit: int | None = None,
              **kw: Any) -> httpx.Response:
        """``limit``: the most bytes the answer may hold (:data:`MAX_ANSWER_BYTES`).
        The store is named by its origin wherever it is shown (errors printed, ``graph
        follow``'s status): its URL may carry a key (``?key=…``), used only to reach it
        (``tests/security/test_618``)."""
        name = url_origin(url)
        try:
            response = self._bounded(self.client.build_request(method, url, **kw), name,
                                     MAX_ANSWER_BYTES if limit is None else limit)
        except httpx.TimeoutException as exc:
            raise GraphTimeoutError(
                f"the graph store `{name}` did not answer within "
                f"{self.remote.timeout_s:g} s",
                hint="a longer `timeout_s` in the home's `graph` setting, or "
                     "`CRADLE_GRAPH_TIMEOUT`") from exc
        except httpx.HTTPError as exc:
            raise GraphUnreachableError(
                f"cannot reach the graph store `{name}`: {type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:200]}",
                hint="is the store running? the journal is intact: `cradle-kg graph "
                     "follow` catches the graph up once it is back") from None
        if response.status_code in (401, 403):
            raise GraphAuthError(f"the graph store `{name}` refused the credentials "
                                 f"(HTTP {response.status_code})",
                                 hint="set `CRADLE_GRAPH_TOKEN`, or `CRADLE_GRAPH_USER` and "
                                      "`CRADLE_GRAPH_PASSWORD`")
        return response

    def _bounded(self, request: httpx.Request, name: str, limit: int) -> httpx.Response:
        """The answer to ``request``, read whole — refused past ``limit`` bytes (decoded:
        a gzip stream of 1 MB is 1 GB of spaces) or :data:`ANSWER_TIMEOUTS` times
        ``timeout_s`` after the request was sent: the connection and the headers within
        it too, every wait cut to what is left (a store sending its headers a byte at a
        time: tests/security/test_611)."""
        with deadline(ANSWER_TIMEOUTS * self.remote.timeout_s):
            return self._read(request, name, limit)

    def _read(self, request: httpx.Request, name: str, limit: int) -> httpx.Response:
        streamed = self.client.send(request, stream=True)
        try:
            until = time.monotonic() + ANSWER_TIMEOUTS * self.remote.timeout_s
            body = bytearray()
            # decoded here, never past the limit: httpx decodes each chunk whole, and 64 KB
            # of zstd is 2 GiB of spaces (tests/security/test_83)
            decode = _decoder(streamed.headers.get("content-encoding", ""), name)
            for raw in streamed.iter_raw():
                body += decode(raw, limit - len(body))
                if len(body) > limit:
                    raise GraphAnswerTooLargeError(
                        f"the graph store `{name}` answered more than {limit} bytes")
                if time.monotonic() > until:
                    raise GraphTimeoutError(
                        f"the graph store `{name}` did not send its whole answer within "
                        f"{ANSWER_TIMEOUTS * self.remote.timeout_s:g} s",
                        hint="a longer `timeout_s` in the home's `graph` setting, or "
                             "`CRADLE_GRAPH_TIMEOUT`")
            body += decode(b"", limit - len(body))
            if len(body) > limit:
                raise GraphAnswerTooLargeError(
                    f"the graph store `{name}` answered more than {limit} bytes")
        finally:
            streamed.close()
        headers = [(k, v) for k, v in streamed.headers.multi_items()
                   if k.lower() not in _WIRE_HEADERS]
        return httpx.Response(streamed.status_code, headers=headers, content=bytes(body),
                              request=request)

    @staticmethod
    def _fail(response: httpx.Response, what: str) -> GraphResponseError:
        body = " ".join(response.text.split())[:300]
        return GraphResponseError(f"the graph store answered HTTP {response.status_code} "
                                  f"to {what}: {body}")

    def _update(self, text: str) -> None:
        self._names = None
        response = self._send("POST", self.remote.update, content=text.encode("utf-8"),
                              limit=SMALL_ANSWER_BYTES,
                              headers={"Content-Type": "application/sparql-update"})
        if response.status_code >= 300:
            raise self._fail(response, "an update")

    def _select(self, text: str, *, data: Sequence[tuple[str, str]] = (),
                accept: str = _RESULTS_JSON, limit: int | None = None) -> httpx.Response:
        body = urlencode([("query", text), *data]).encode("ascii")
        response = self._send("POST", self.remote.query, content=body, limit=limit,
                              headers={"Accept": accept,
                                       "Content-Type": "application/x-www-form-urlencoded"})
        if response.status_code == 400:
            said = " ".join(response.text.split())[:300]
            raise QueryError(f"the query does not parse or cannot run (the graph store "
                             f"refused it): {said}")
        if response.status_code >= 300:
            raise self._fail(response, "a query")
        return response

    def _solutions(self, text: str, *, limit: int | None = None
                   ) -> ox.QuerySolutions | ox.QueryBoolean:
        response = self._select(text, limit=limit)
        return self._parse_results(response)

    def _parse_results(self, response: httpx.Response) -> ox.QuerySolutions | ox.QueryBoolean:
        """The answer as SPARQL JSON results, every row read here: pyoxigraph parses
        solutions lazily, and a row that does not parse (a variable not in the header, an
        IRI with a space) raised a bare ``SyntaxError`` wherever the caller read it —
        ``query``, ``validate --all`` (tests/security/test_82). Checked whole, then parsed
        again for the caller (a result is read once)."""
        content = canonical_json(response.content)
        try:
            parsed = ox.parse_query_results(content, format=ox.QueryResultsFormat.JSON)
            if isinstance(parsed, ox.QuerySolutions):
                for _ in parsed:
                    pass
                parsed = ox.parse_query_results(content, format=ox.QueryResultsFormat.JSON)
        except (SyntaxError, ValueError) as exc:
            raise GraphResponseError(f"the graph store's answer is not SPARQL JSON "
                                     f"results: {exc}") from None
        if not isinstance(parsed, ox.QuerySolutions | ox.QueryBoolean):
            raise GraphResponseError("the graph store's answer is not SPARQL JSON results")
        return parsed

    def _rows(self, text: str, *, limit: int | None = None) -> list[ox.QuerySolution]:
        found = self._solutions(text, limit=limit)
        if not isinstance(found, ox.QuerySolutions):
            raise GraphResponseError("the graph store answered a boolean to a SELECT")
        try:
            return list(found)
        except (SyntaxError, ValueError) as exc:
            raise GraphResponseError(f"the graph store's results do not parse: {exc}") from None

    # --- the watermark ---------------------------------------------------------------

    def _meta(self, predicate: str, subject: str = META_GRAPH) -> str | None:
        rows = self._rows(f"SELECT ?v WHERE {{ GRAPH <{META_GRAPH}> {{ <{subject}> "
                          f"<{predicate}> ?v }} }}", limit=SMALL_ANSWER_BYTES)
        for row in rows:
            value = row[0]
            if isinstance(value, ox.Literal):
                return str(value.value)
        return None

    def _meta_number(self, predicate: str, what: str) -> int | None:
        """The one number the meta graph holds under ``predicate`` (None: none), read
        strictly: a store (or a man in the middle, or another writer of the meta graph)
        answering several values, an IRI, or anything but ASCII digits is refused —
        ``int()`` read ``"٣"`` as 3 and the first of two values won (test_80)."""
        rows = self._rows(f"SELECT ?v WHERE {{ GRAPH <{META_GRAPH}> {{ <{META_GRAPH}> "
                          f"<{predicate}> ?v }} }}", limit=SMALL_ANSWER_BYTES)
        return meta_number([row[0] for row in rows], what)

    def projected_seq(self) -> int:
        return self._meta_number(SEQ, "watermark") or 0

    def journal_identity(self) -> str | None:
        if self._journal is None:
            rows = self._rows(f"SELECT ?v WHERE {{ GRAPH <{META_GRAPH}> {{ <{META_GRAPH}> "
                              f"<{JOURNAL}> ?v }} }}", limit=SMALL_ANSWER_BYTES)
            self._journal = meta_text([row[0] for row in rows], "journal identity")
        return self._journal

    def bind_journal(self, identity: str) -> None:
        # one operation: a request stopped part-way never leaves the store naming no
        # journal, which the next catch-up of any journal would bind (test_405)
        self._update(meta_replace({JOURNAL: str(ox.Literal(identity))}))
        self._journal = identity

    def layout(self) -> int:
        # read like the watermark: ``"²".isdigit()`` held and ``int()`` then raised a
        # ValueError out of every catch-up (tests/security/test_81)
        found = self._meta_number(VERSION, "projection layout")
        return 1 if found is None else found  # 0: a rebuild began and did not end

    def apply(self, batch: QuadBatch, seq: int) -> None:
        # INVARIANT: the batch and its watermark in ONE request (module docstring) — up to
        # _APPLY_BYTES of operations; a bigger batch goes in several requests, in order,
        # the watermark in the last: a kill between them leaves the watermark behind, and
        # the next catch-up re-applies set operations (Virtuoso compiles ~2,500 triples/s
        # of INSERT DATA here: one request of a 5,000-event batch outlasts any timeout)
        try:  # refused before any request: a big batch goes in several
            list(ox.parse(batch.all_nquads(),
                          format=ox.RdfFormat.N_QUADS))
        except SyntaxError as exc:
            raise GraphStoreError(f"the projection is not N-Quads: {exc}") from None
        chunk: list[str] = []
        size = 0
        for op in batch.sparql(_APPLY_BYTES // 2):
            if chunk and size + len(op) > _APPLY_BYTES:
                self._update(" ;\n".join(chunk))
                chunk, size = [], 0
            chunk.append(op)
            size += len(op) + 3
        self._update(" ;\n".join([*chunk, watermark_update(seq)]))

    def replace_all(self, nquads: Iterable[str], retractions: Sequence[str],
                    watermark: Callable[[], int]) -> None:
        # INVARIANT: the store is marked as being rebuilt (layout 0) BEFORE anything is
        # dropped — in the same request, first: Virtuoso applies a request's operations
        # one by one, and the drops first, then the watermark, left a request stopped
        # part-way with the old watermark over the graphs it had dropped (test_404);
        # stopped anywhere now, the next catch-up rebuilds the store whole. The projection's
        # graphs go (the packs' knowledge stays), listed without reading the watermark: a
        # rebuild is how a garbled one is mended
        drops = [f"DROP SILENT GRAPH <{g}>" for g in split_graphs(self._list_graphs())[1]]
        self._update(" ;\n".join([rebuilding_mark(), *drops]))
        for chunk in nquads:
            by_graph: dict[str, list[str]] = {}
            try:
                for quad in ox.parse(chunk, format=ox.RdfFormat.N_QUADS):
                    g = quad.graph_name
                    name = g.value if isinstance(g, ox.NamedNode) else ""
                    by_graph.setdefault(name, []).append(
                        f"{quad.subject} {quad.predicate} {quad.object} .\n")
            except SyntaxError as exc:
                raise GraphStoreError(f"the projection is not N-Quads: {exc}") from None
            for name, lines in by_graph.items():
                for start in range(0, len(lines), _LOAD_CHUNK):
                    self._post_graph(name, "".join(lines[start:start + _LOAD_CHUNK]))
        for start in range(0, len(retractions), 1000):
            self._update("DELETE DATA { " + " ".join(retractions[start:start + 1000]) + " }")
        self._update(watermark_update(watermark()))

    def _graph_params(self, name: str) -> dict[str, str]:
        return {self.remote.graph_param: name} if name else {"default": ""}

    def _post_graph(self, name: str, ntriples: str) -> None:
        response = self._send("POST", self.remote.store, params=self._graph_params(name),
                              limit=SMALL_ANSWER_BYTES,
                              content=ntriples.encode("utf-8"),
                              headers={"Content-Type": _NTRIPLES})
        if response.status_code >= 300:
            raise self._fail(response, f"a graph-store POST to `{name}`")

    # --- reading ---------------------------------------------------------------------

    def query(self, text: str, *, bound: Mapping[str, Term] | None = None,
              union: bool = True, default_graph: Sequence[str] | None = None,
              named_graphs: Sequence[str] | None = None,
              base_iri: str | None = None) -> QueryResult:
        # INVARIANT: never an answer read from a store being rebuilt in place (layout 0:
        # marked, its graphs dropped, loaded graph by graph, the retractions last): the
        # layout read before the query and again after it (test_541)
        state = self._state()
        self._not_rebuilding(state[1])
        if base_iri is not None:
            text = f"BASE <{base_iri}>\n{text}"
        if bound:
            text = with_values(text, {k: str(v) for k, v in bound.items()})
        text = with_now(text, str(ox.Literal(
            datetime.now(UTC).isoformat().replace("+00:00", "Z"), datatype=DATETIME)))
        # a request that names any graph names the whole dataset: as on the embedded
        # store, every graph stays reachable by GRAPH unless named graphs are given
        data: list[tuple[str, str]] = []
        every: list[str] | None = None
        if default_graph is not None:
            data += [("default-graph-uri", g) for g in default_graph or ["urn:cradle:empty"]]
        elif union:
            every = self._dataset_names(state)
            data += [("default-graph-uri", g) for g in every or ["urn:cradle:empty"]]
        if named_graphs is not None:
            data += [("named-graph-uri", g) for g in named_graphs or ["urn:cradle:empty"]]
        elif data:
            every = self._dataset_names(state) if every is None else every
            data += [("named-graph-uri", g) for g in every or ["urn:cradle:empty"]]
        # the form decides what to ask for: given the choice, Virtuoso answers a CONSTRUCT
        # in SPARQL JSON results (s, p, o bindings) rather than as RDF
        form = query_form(text)
        accept = _ACCEPT_RDF if form in ("CONSTRUCT", "DESCRIBE") else \
            _RESULTS_JSON if form in ("SELECT", "ASK") else _ACCEPT_ANY
        response = self._select(text, data=data, accept=accept)
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        self._not_rebuilding(self.layout())
        results = "sparql-results" in media or media.endswith("json")
        if form in ("SELECT", "ASK") and not results:
            # read as RDF, a 204 or an empty page answered a SELECT as no rows (test_82)
            raise GraphResponseError(f"the graph store answered a {form} with "
                                     f"`{media[:60] or 'no content type'}`, not SPARQL "
                                     "results")
        if results:
            result = self._parse_results(response)
            if bound and isinstance(result, ox.QuerySolutions):
                names = {v.value for v in result.variables}
                missing = sorted(set(bound) - names)
                if missing:
                    raise QueryError(f"the query cannot run: the bound variable "
                                     f"`{missing[0]}` is not projected by the query")
            return result
        return _triples(response, media)

    def tsv(self, select: str) -> bytes:
        found = self._solutions(select)
        if not isinstance(found, ox.QuerySolutions):
            raise GraphResponseError("the graph store answered a boolean to a SELECT")
        out = found.serialize(format=ox.QueryResultsFormat.TSV)
        assert out is not None
        return out

    def ask(self, query: str) -> bool:
        found = self._solutions(query)
        if not isinstance(found, ox.QueryBoolean):
            raise GraphResponseError("the graph store did not answer a boolean to an ASK")
        return bool(found)

    def graph_names(self) -> list[str]:
        """cradle-kg's graphs in the store (``https://w3id.org/cradle/…``: a store the
        organisation already runs holds other graphs, and its own system graphs, which are
        none of the projection's business)."""
        names = self._list_graphs()
        self._names = (self._state(), names)
        return names

    def _state(self) -> tuple[int, int]:
        """(watermark, layout): what a listing of the graphs is kept for. The layout too:
        a rebuild keeps the watermark and marks the layout (0) until it ends, so a list
        made meanwhile is not reused after it (test_404)."""
        return self.projected_seq(), self.layout()

    def _list_graphs(self) -> list[str]:
        rows = self._rows("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } "
                          f"FILTER(STRSTARTS(STR(?g), \"{OUR_GRAPHS}\")) }}")
        return sorted(r[0].value for r in rows if isinstance(r[0], ox.NamedNode))

    @staticmethod
    def _not_rebuilding(layout: int) -> None:
        if layout == 0:
            raise GraphStoreError(
                "the graph store is being rebuilt (or a rebuild of it stopped part-way): "
                "what it holds now is not the journal's projection; nothing was answered",
                hint="ask again when the rebuild ends; `cradle-kg graph sync` rebuilds a "
                     "store whose rebuild stopped")

    def _dataset_names(self, state: tuple[int, int] | None = None) -> list[str]:
        """The graphs a union default graph spans: listed again only when the watermark or
        the layout (``state``, read now when not given) moved (listing scans the store;
        reading them is a pattern each)."""
        state = self._state() if state is None else state
        if self._names is not None and self._names[0] == state:
            return self._names[1]
        return self.graph_names()

    def run_graphs(self) -> list[str]:
        return split_graphs(self.graph_names())[0]

    def data_graphs(self) -> list[str]:
        return split_graphs(self.graph_names())[1]

    def knowledge_graphs(self) -> list[str]:
        return split_graphs(self.graph_names())[2]

    def knowledge_digest(self, graph: str) -> str | None:
        return self._meta(DIGEST, graph)

    def install_knowledge(self, graph: str, digest: str, data: str, *,
                          turtle: bool = False) -> None:
        check_knowledge_name(graph)
        fmt = ox.RdfFormat.TURTLE if turtle else ox.RdfFormat.N_TRIPLES
        try:  # parsed here: the store is sent plain N-Triples, whatever it accepts
            body = ox.serialize(ox.parse(data, format=fmt), format=ox.RdfFormat.N_TRIPLES)
        except SyntaxError as exc:
            raise GraphStoreError(f"knowledge graph `{graph}` does not parse: {exc}") from None
        self._update(f"DELETE WHERE {{ GRAPH <{META_GRAPH}> {{ <{graph}> <{DIGEST}> ?d }} }}")
        response = self._send("PUT", self.remote.store, params=self._graph_params(graph),
                              limit=SMALL_ANSWER_BYTES,
                              content=body or b"", headers={"Content-Type": _NTRIPLES})
        if response.status_code >= 300:
            raise self._fail(response, f"a graph-store PUT of `{graph}`")
        self._update(f"INSERT DATA {{ GRAPH <{META_GRAPH}> {{ <{graph}> <{DIGEST}> "
                     f"{json.dumps(digest)} }} }}")

    def nquads(self, *, graphs: Iterable[str] | None = None,
               max_bytes: int = MAX_EXPORT_BYTES) -> str:
        """Each graph's answer within :data:`MAX_ANSWER_BYTES`, and all of them within
        ``max_bytes``: the store lists the graphs, as many as it likes (test_359)."""
        lines: list[str] = []
        room = max_bytes
        for name in (self.data_graphs() if graphs is None else list(graphs)):
            limit = min(MAX_ANSWER_BYTES, room)
            try:
                response = self._send("GET", self.remote.store, limit=limit,
                                      params=self._graph_params(name),
                                      headers={"Accept": _NTRIPLES})
            except GraphAnswerTooLargeError:
                if limit == MAX_ANSWER_BYTES:
                    raise
                raise export_too_large(max_bytes) from None
            room -= len(response.content)
            if response.status_code == 404:  # an empty graph is no graph
                continue
            if response.status_code >= 300:
                raise self._fail(response, f"a graph-store GET of `{name}`")
            graph = ox.NamedNode(name)
            media = response.headers.get("content-type", _NTRIPLES).split(";")[0].strip()
            for triple in _parse(response.content, media):
                obj = canonical_term(triple.object)
                lines.append(f"{ox.Quad(triple.subject, triple.predicate, obj, graph)} .\n")
        return "".join(sorted(set(lines)))

    def flush(self) -> None:
        return None  # each request is applied when it is answered

    def close(self) -> None:
        self.client.close()


def _decoder(encoding: str, store: str) -> Callable[[bytes, int], bytes]:
    """What decodes an answer's body of ``Content-Encoding`` ``encoding``, a chunk at a
    time: ``decode(raw, room)`` gives at most ``room + 1`` bytes (one past the room is
    the sign it did not fit; ``raw`` empty: the end of the body). Identity, gzip or
    deflate — what the client asks for (:data:`_ACCEPT_ENCODING`); anything else is
    refused, not decoded."""
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return lambda raw, room: raw
    if name not in ("gzip", "x-gzip", "deflate"):
        raise GraphResponseError(f"the graph store `{store}` answered in an encoding not "
                                 f"asked for: {encoding[:40]!r}")
    # gzip, or zlib (either header, as the "deflate" of HTTP is sent both ways)
    inflate = zlib.decompressobj(zlib.MAX_WBITS | (16 if "gzip" in name else 32))

    seen = False

    def decode(raw: bytes, room: int) -> bytes:
        nonlocal seen
        try:
            if raw:
                seen = True
                return inflate.decompress(inflate.unconsumed_tail + raw, max(room, 0) + 1)
            out = inflate.decompress(inflate.unconsumed_tail, max(room, 0) + 1)
            if seen and not inflate.eof and len(out) <= room:
                raise GraphResponseError(f"the graph store `{store}` sent a compressed "
                                         "answer cut short")
            return out
        except zlib.error as exc:
            raise GraphResponseError(f"the graph store `{store}` sent a compressed answer "
                                     f"that does not decompress: {exc}") from None

    return decode


def _parse(content: bytes, media: str) -> list[ox.Triple]:
    """An RDF answer in a format the client asks for (:data:`_ACCEPT_RDF`); a type it does
    not know is read as N-Triples. Any other RDF format is refused unparsed: RDF/XML
    expands the entities its DTD declares, and 700 bytes were a literal of 640 MB
    (tests/security/test_345)."""
    fmt = ox.RdfFormat.from_media_type(media) or ox.RdfFormat.N_TRIPLES
    if fmt not in _RDF_ASKED:
        raise GraphResponseError(f"the graph store answered RDF as `{media[:60]}`, a format "
                                 "not asked for (N-Triples or Turtle)")
    try:
        return [ox.Triple(q.subject, q.predicate, q.object)
                for q in ox.parse(content, format=fmt)]
    except (SyntaxError, ValueError) as exc:
        raise GraphResponseError(f"the graph store's RDF answer (`{media}`) does not parse: "
                                 f"{exc}") from None


def _triples(response: httpx.Response, media: str) -> ox.QueryTriples:
    """A CONSTRUCT / DESCRIBE answer as pyoxigraph triples (read into a scratch store)."""
    scratch = ox.Store()
    scratch.extend(ox.Quad(t.subject, t.predicate, t.object) for t in
                   _parse(response.content, media or _NTRIPLES))
    found = scratch.query("CONSTRUCT WHERE { ?s ?p ?o }")
    assert isinstance(found, ox.QueryTriples)
    return found


__all__ = ["SparqlHttpStore"]
