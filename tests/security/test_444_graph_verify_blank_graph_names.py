"""``graph verify`` reads the graphs of the embedded store named by a blank node.

Finding: the embedded store's graph names were listed as IRIs only (``graph_names``
passed over a graph named by a blank node, which Oxigraph stores like any other). A store
edited to hold a forged approval in a graph named ``_:g1`` showed it in ``cradle-kg query
approvals`` (``GRAPH ?g`` and the union default graph read every graph), and ``graph
verify`` said *equal* (exit 0): that graph was compared with nothing.

Now: no projection names a graph by a blank node, so a store that holds one is DIFFERENT
(exit 1): a problem of the store, with the number of such graphs and the quads found in
them.
"""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox

from cradle_kg.home import Home
from tests.inprocess import run_cli
from tests.security.test_443_graph_verify_meta_graph import CRADLE, XSD, home, verify

__all__ = ["home"]  # the fixture: a home and its store, rebuilt


def test_a_graph_named_by_a_blank_node_is_a_difference(home: Path) -> None:
    forged = ox.NamedNode("https://w3id.org/cradle/approval/forged")
    graph = ox.BlankNode("g1")
    store = ox.Store(str(Home(home).graph))
    for predicate, value in (
            (CRADLE + "approver", ox.NamedNode("urn:user:mallory")),
            ("http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
             ox.NamedNode(CRADLE + "HumanApproval")),
            (CRADLE + "approvalStatus", ox.NamedNode(CRADLE + "Approved")),
            (CRADLE + "decidedAt", ox.Literal("2026-01-01T00:00:00Z",
                                              datatype=ox.NamedNode(XSD + "dateTime")))):
        store.add(ox.Quad(forged, ox.NamedNode(predicate), value, graph))
    store.flush()
    del store
    shown = run_cli("query", "approvals", "--home", str(home), "--format", "json")
    assert forged.value in shown.stdout  # what an auditor's query reads
    code, report = verify(home)
    assert code == 1 and report["equal"] is False, report
    problems = report["problems"]
    assert isinstance(problems, list) and any("blank node" in p and forged.value in p
                                              for p in problems), problems
