"""What a ``/sparql`` request asks, read without any web framework (the query workers'
front and the app's route share it): a job, a refusal, or the Service Description."""

from __future__ import annotations

from typing import Final
from urllib.parse import parse_qsl

import pyoxigraph as ox

from ..errors import QueryError
from ..graph.queries import PAGE_PARAMS, QueryCatalog, bind, paged, read_page
from .negotiation import graph_format
from .worker import Job, wire_term

SD: Final = "http://www.w3.org/ns/sparql-service-description#"
_FORMAT_PARAMS: Final = ("format", "output", "results")
_RESULT_FORMATS: Final = ("SPARQL_Results_JSON", "SPARQL_Results_XML", "SPARQL_Results_CSV",
                          "SPARQL_Results_TSV", "Turtle", "N-Triples", "RDF_XML", "JSON-LD")


def service_description(endpoint: str, accept: str | None, formats: list[str], *,
                        federated: bool = False) -> tuple[bytes, str]:
    """The SPARQL 1.1 Service Description of the endpoint: (body, media type)."""
    ns = ox.NamedNode
    svc = ns(endpoint)
    dataset = ox.BlankNode()
    default_graph = ox.BlankNode()
    rdf_type = ns("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    triples = [
        ox.Triple(svc, rdf_type, ns(SD + "Service")),
        ox.Triple(svc, ns(SD + "endpoint"), svc),
        ox.Triple(svc, ns(SD + "supportedLanguage"), ns(SD + "SPARQL11Query")),
        ox.Triple(svc, ns(SD + "feature"), ns(SD + "UnionDefaultGraph")),
        ox.Triple(svc, ns(SD + "defaultDataset"), dataset),
        ox.Triple(dataset, rdf_type, ns(SD + "Dataset")),
        ox.Triple(dataset, ns(SD + "defaultGraph"), default_graph),
        ox.Triple(default_graph, rdf_type, ns(SD + "Graph")),
        ox.Triple(svc, ns("http://purl.org/dc/terms/description"), ox.Literal(
            "cradle-kg provenance graph (read-only); the default graph is the union of all "
            "runs, each run a named graph; SERVICE only to allow-listed endpoints")),
    ]
    if federated:  # only when an operator allow-listed SERVICE endpoints
        triples.append(ox.Triple(svc, ns(SD + "feature"), ns(SD + "BasicFederatedQuery")))
    triples += [ox.Triple(svc, ns(SD + "resultFormat"),
                          ns("http://www.w3.org/ns/formats/" + f)) for f in _RESULT_FORMATS]
    fmt, media = graph_format(accept, formats)
    return ox.serialize(triples, format=fmt) or b"", media


def named_job(catalog: QueryCatalog, name: str, params: dict[str, str],
              accept: str | None) -> Job:
    """The job a ``/queries/NAME`` request asks for (the workers' front and the app's route
    share it): ``format``/``output``/``results`` choose the answer's format, ``limit`` and
    ``offset`` a page of it, every other parameter binds a query parameter. Raises
    :class:`~cradle_kg.errors.CradleError` (``unknown_name``: 404; the rest: 400)."""
    query = catalog.get(name)
    reserved = (*_FORMAT_PARAMS, *PAGE_PARAMS)
    bound = bind(query, {k: v for k, v in params.items() if k not in reserved})
    text = paged(query.text, read_page(params))
    return Job(query=text, accept=accept,
               formats=tuple(v for k, v in params.items() if k in _FORMAT_PARAMS),
               bound=tuple((k, wire_term(t)) for k, t in bound.items()))


def _params_of(query_string: str, method: str, ctype: str, body: bytes
               ) -> tuple[list[tuple[str, str]], str | None]:
    """All protocol parameters (URL and form) and a query sent as the body, if any."""
    params = list(parse_qsl(query_string, keep_blank_values=True))
    if method != "POST":
        return params, None
    ctype = ctype.split(";")[0].strip().lower()
    text = body.decode("utf-8", errors="replace")
    if ctype == "application/x-www-form-urlencoded":
        params += parse_qsl(text, keep_blank_values=True)
        return params, None
    if ctype == "application/sparql-query":
        return params, text
    if ctype == "application/sparql-update":
        params.append(("update", text))
        return params, None
    raise QueryError(f"unsupported content type `{ctype or '(none)'}`",
                     hint="POST application/x-www-form-urlencoded or application/sparql-query")


def plan(method: str, query_string: str, ctype: str, body: bytes, accept: str | None,
         endpoint: str) -> Job | tuple[int, str] | tuple[str, list[str]]:
    """What a ``/sparql`` request asks: a job, a refusal ``(status, text)``, or the service
    description ``("describe", formats)``."""
    try:
        params, body_query = _params_of(query_string, method, ctype, body)
    except QueryError as exc:
        return 415, exc.message
    formats = [v for k, v in params if k in _FORMAT_PARAMS]
    if any(k in ("update", "using-graph-uri", "using-named-graph-uri") for k, _ in params):
        return 403, "SPARQL Update is refused: this endpoint is read-only"
    queries = [v for k, v in params if k == "query"] + (
        [body_query] if body_query is not None else [])
    if not queries:
        if method == "GET":
            return "describe", formats
        return 400, "no query: send `query=` or an application/sparql-query body"
    if len(queries) > 1:
        return 400, "more than one query in the request"
    defaults = [v for k, v in params if k == "default-graph-uri"]
    named = [v for k, v in params if k == "named-graph-uri"]
    for iri in defaults + named:
        try:
            ox.NamedNode(iri)
        except ValueError as exc:
            return 400, f"graph IRI `{iri}` is not valid: {exc}"
    return Job(query=queries[0], accept=accept, formats=tuple(formats),
               default_graphs=tuple(defaults) if defaults else None,
               named_graphs=tuple(named) if named else None, base_iri=endpoint)


__all__ = ["plan", "service_description"]
