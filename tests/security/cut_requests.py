"""A remote graph store whose update requests stop part-way, as a real store stops them.

Virtuoso applies an update request's operations one by one: an operation that fails at
run time (a deadlock with another writer, a full disk, a server stopping) leaves the
operations before it applied and skips those after it. :class:`CutStore` reproduces that
on the real server: the request it is told to cut is sent with only its first ``keep``
operations, followed by ``DROP GRAPH`` of a graph never created — which Virtuoso refuses
at run time, keeping what came before — and the store's typed error is raised as the
real failure's would be. ``oxigraph serve`` applies a request in one transaction: there a
cut request changes nothing.
"""

from __future__ import annotations

from typing import Any

from cradle_kg.storage.graph_config import parse_setting, resolve
from cradle_kg.storage.sparql_http import SparqlHttpStore

#: what the remote store joins a request's operations with
SEPARATOR = " ;\n"
#: an operation every engine compiles and Virtuoso refuses at run time
FAILING = "DROP GRAPH <urn:cradle-test:never-created>"
#: the remote engines the tests run on (their fixtures: tests/graph_backends.py)
REMOTE = {"oxigraph-serve": "fresh_oxigraph", "virtuoso": "fresh_virtuoso"}


def remote_store(server: Any) -> SparqlHttpStore:
    """A client of a scratch server (``fresh_oxigraph`` / ``fresh_virtuoso``)."""
    return SparqlHttpStore(resolve(parse_setting(server.setting())))


def operations(text: str) -> list[str]:
    return text.split(SEPARATOR)


class CutStore(SparqlHttpStore):
    """The ``cut``-th update request (1: the first sent) stops after ``keep`` of its
    operations; every other request goes as it is. ``sent`` lists the requests as
    they were meant to be."""

    def __init__(self, server: Any, *, cut: int = 0, keep: int = 0) -> None:
        super().__init__(resolve(parse_setting(server.setting())))
        self.cut, self.keep = cut, keep
        self.sent: list[str] = []

    def _update(self, text: str) -> None:
        self.sent.append(text)
        if len(self.sent) != self.cut:
            super()._update(text)
            return
        kept = operations(text)[:self.keep]
        super()._update(SEPARATOR.join([*kept, FAILING]))
        raise AssertionError(f"the store applied `{FAILING}`: the request was not cut")
