"""Content negotiation for the SPARQL protocol: which serialization a client gets.

SELECT and ASK results: SPARQL results JSON (default), XML, CSV, TSV. CONSTRUCT and
DESCRIBE graphs: Turtle (default), N-Triples, RDF/XML, JSON-LD. The ``Accept`` header
decides, with q-values; a ``format`` / ``output`` / ``results`` parameter (which
SPARQLWrapper sends beside its Accept header) overrides it when it names a known
format. Nothing acceptable falls back to the default rather than a 406: clients that
ask for "results" in a graph query (SPARQLWrapper does) still get an answer.
"""

from __future__ import annotations

from typing import Final

import pyoxigraph as ox

RESULTS: Final[dict[str, ox.QueryResultsFormat]] = {
    "application/sparql-results+json": ox.QueryResultsFormat.JSON,
    "application/json": ox.QueryResultsFormat.JSON,
    "application/sparql-results+xml": ox.QueryResultsFormat.XML,
    "application/xml": ox.QueryResultsFormat.XML,
    "text/xml": ox.QueryResultsFormat.XML,
    "text/csv": ox.QueryResultsFormat.CSV,
    "text/tab-separated-values": ox.QueryResultsFormat.TSV,
}
GRAPHS: Final[dict[str, ox.RdfFormat]] = {
    "text/turtle": ox.RdfFormat.TURTLE,
    "application/turtle": ox.RdfFormat.TURTLE,
    "application/x-turtle": ox.RdfFormat.TURTLE,
    "text/n3": ox.RdfFormat.TURTLE,
    "text/rdf+n3": ox.RdfFormat.TURTLE,
    "application/n-triples": ox.RdfFormat.N_TRIPLES,
    "text/plain": ox.RdfFormat.N_TRIPLES,
    "application/rdf+xml": ox.RdfFormat.RDF_XML,
    "application/xml": ox.RdfFormat.RDF_XML,
    "text/xml": ox.RdfFormat.RDF_XML,
    "application/ld+json": ox.RdfFormat.JSON_LD,
    "application/x-json+ld": ox.RdfFormat.JSON_LD,
    "application/json": ox.RdfFormat.JSON_LD,
}
_RESULT_NAMES: Final = {"json": "application/sparql-results+json",
                        "xml": "application/sparql-results+xml",
                        "csv": "text/csv", "tsv": "text/tab-separated-values"}
_GRAPH_NAMES: Final = {"turtle": "text/turtle", "ttl": "text/turtle", "n3": "text/turtle",
                       "nt": "application/n-triples", "ntriples": "application/n-triples",
                       "n-triples": "application/n-triples", "xml": "application/rdf+xml",
                       "rdf": "application/rdf+xml", "rdf+xml": "application/rdf+xml",
                       "rdfxml": "application/rdf+xml", "json-ld": "application/ld+json",
                       "jsonld": "application/ld+json", "json": "application/ld+json"}


def parse_accept(header: str | None) -> list[str]:
    """Media types of an Accept header, best first (q=0 dropped, order kept on ties)."""
    if not header:
        return []
    ranked: list[tuple[float, int, str]] = []
    for i, part in enumerate(header.split(",")):
        fields = [f.strip() for f in part.split(";")]
        media = fields[0].lower()
        q = 1.0
        for f in fields[1:]:
            if f.startswith("q="):
                try:
                    q = float(f[2:])
                except ValueError:
                    q = 0.0
        if media and q > 0:
            ranked.append((-q, i, media))
    return [m for _, _, m in sorted(ranked)]


def _wanted(accept: str | None, formats: list[str], names: dict[str, str]) -> list[str]:
    explicit = []
    for value in formats:
        value = value.strip().lower()
        if value in names:
            explicit.append(names[value])
        elif "/" in value:
            explicit.append(value)
    return explicit + parse_accept(accept)


def results_format(accept: str | None, formats: list[str]) -> tuple[ox.QueryResultsFormat, str]:
    for media in _wanted(accept, formats, _RESULT_NAMES):
        if media in RESULTS:
            fmt = RESULTS[media]
            return fmt, fmt.media_type
    return ox.QueryResultsFormat.JSON, ox.QueryResultsFormat.JSON.media_type


def graph_format(accept: str | None, formats: list[str]) -> tuple[ox.RdfFormat, str]:
    for media in _wanted(accept, formats, _GRAPH_NAMES):
        if media in GRAPHS:
            fmt = GRAPHS[media]
            return fmt, fmt.media_type
    return ox.RdfFormat.TURTLE, ox.RdfFormat.TURTLE.media_type
