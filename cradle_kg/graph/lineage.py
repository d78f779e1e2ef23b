"""Lineage in the graph: the projection of ``lineage.traced`` and ``input.recorded``, and
the small in-memory graph gate 1's graph policies are asked over.

``project.py`` plugs :data:`LINEAGE_PROJECTORS` into its table; the triples are built by
:mod:`cradle_kg.lineage.rdf`, so the gate and the run's graph read the same terms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import unquote

import pyoxigraph as ox

from ..lineage.rdf import ID_BASE, input_triples, node, trace_triples
from ..records import AuditEvent
from ..redaction import secret_names


class _Adds(Protocol):
    def add(self, s: str, pred: str, o: str) -> None: ...


def _add_all(q: _Adds, lines: Sequence[str]) -> None:
    for line in lines:
        s, pred, o = line.split(" ", 2)
        q.add(s, pred, o)


def _traced(q: _Adds, ev: AuditEvent) -> str:
    trace = ev.payload["trace"]
    _add_all(q, trace_triples(trace, secret=secret_names(ev.payload)))
    return node("action", trace["action_id"])


def _input(q: _Adds, ev: AuditEvent) -> str:
    ref = str(ev.payload.get("ref", ev.subject))
    _add_all(q, input_triples(ref, ev.payload))
    return node("input", ref)


#: the projectors of the lineage events (by event kind)
LINEAGE_PROJECTORS: dict[str, Any] = {"lineage.traced": _traced, "input.recorded": _input}


class Graph:
    """A small in-memory graph of ``"s p o"`` lines, asked SPARQL ASK or SELECT."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.store = ox.Store()
        self.store.load("".join(f"{t} .\n" for t in lines).encode("utf-8"),
                        ox.RdfFormat.N_TRIPLES)

    def select(self, query: str) -> list[dict[str, str]]:
        """Rows of a SELECT (or one empty row for a true ASK)."""
        return _rows(self.store.query(query))


def _rows(result: Any) -> list[dict[str, str]]:
    if isinstance(result, ox.QueryBoolean):
        return [{}] if bool(result) else []
    if not isinstance(result, ox.QuerySolutions):
        raise ValueError("a graph policy is a SPARQL ASK or SELECT query")
    names = [v.value for v in result.variables]
    return [{n: _shown(row[n]) for n in names} for row in result]


def _shown(term: Any) -> str:
    """A binding as text; one of our node IRIs as the id it names."""
    if term is None:
        return ""
    if isinstance(term, ox.NamedNode) and term.value.startswith(ID_BASE):
        return unquote(term.value.rsplit("/", 1)[-1])
    return str(term.value)
