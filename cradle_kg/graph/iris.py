"""The IRIs of the projection: an object's (``ID_BASE``) and a run's named graph
(``RUN_BASE``), each id percent-encoded.

Apart from :mod:`.project` (which re-exports them) so that a process that only names
objects — a query worker binding a named query's parameter — does not import the
projection and the event records.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import quote

#: the IRIs the projection names things with: a named query's parameter that begins with
#: its kind's base here is read as that IRI, so no id an agent chooses may begin so
#: (:func:`cradle_kg.loop.proposal.graph_iri_id`, ``tests/security/test_387``)
IRI_SPACE = "https://w3id.org/cradle/"
ID_BASE = IRI_SPACE + "id/"
RUN_BASE = IRI_SPACE + "run/"


#: ``quote(..., safe='')`` of every ASCII character: what is not unreserved, percent-encoded
_PERCENT = {i: f"%{i:02X}" for i in range(128)
            if not (chr(i).isascii() and (chr(i).isalnum() or chr(i) in "_.-~"))}


@lru_cache(maxsize=16384)
def quoted(ident: str) -> str:
    """``quote(ident, safe='')``, remembered (a projection quotes the same few ids — run,
    agent, task, policies — again and again), and for ASCII text by one ``translate``
    (the same characters encoded the same way; ``urllib`` walks it byte by byte)."""
    return ident.translate(_PERCENT) if ident.isascii() else quote(ident, safe="")


def node(kind: str, ident: str) -> str:
    return f"<{ID_BASE}{kind}/{quoted(ident)}>"


def run_graph(run_id: str) -> str:
    return f"<{RUN_BASE}{quoted(run_id)}>"


__all__ = ["ID_BASE", "IRI_SPACE", "RUN_BASE", "node", "quoted", "run_graph"]
