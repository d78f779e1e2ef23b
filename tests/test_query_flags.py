"""The two flags the projection keeps for the listing queries (issue 17, target 2).

``cradle:awaitsVerification`` (an executed action whose verification is not recorded yet)
and ``cradle:awaitsUse`` (an approval given and not used yet) let ``unverified-actions``
and ``stale-approvals`` find their candidates through an index instead of a pass over
every action / approval. Checked here on the real demo journal: each flag is there while
its condition holds and retracted once it ends — the same after an event-by-event sync
and after a rebuild — and an action executed without a recorded verification (a crash
between the observation and the verification) is listed by ``unverified-actions``.
"""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox
import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.graph.catchup import rebuild
from cradle_kg.graph.project import RUN_BASE, SHARED_GRAPH, action_node, node, project_nquads
from cradle_kg.graph.queries import QueryCatalog, bind, execute
from cradle_kg.records import ApprovalStatus, AuditEvent
from cradle_kg.storage.opening import open_home_journal
from cradle_kg.storage.oxigraph import OxigraphStore
from tests import demo_template
from tests.graph_backends import read_home_graph

C = "https://w3id.org/cradle#"


def _flagged(store: ox.Store, flag: str) -> set[str]:
    return {str(q.subject) for q in store.quads_for_pattern(None, ox.NamedNode(C + flag), None)}


def _projected(store: ox.Store) -> list[str]:
    """The run graphs and the shared graph (not the store's meta or the packs' knowledge)."""
    return sorted(str(q) for q in store if isinstance(q.graph_name, ox.NamedNode)
                  and (q.graph_name.value.startswith(RUN_BASE)
                       or q.graph_name.value == SHARED_GRAPH))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[AuditEvent], str]:
    """The demo home with an approval given and never used, its events and that approval's
    node — built once: both tests only read it."""
    home = tmp_path_factory.mktemp("flags") / "home"
    demo_template.demo_home(home, tmp_path_factory)
    with Runtime(home) as rt:  # an approval given and never used
        waiting = rt.submit({"id": "p-close-9", "task_id": "task-close-9",
                             "agent_id": "agent:ledger-assistant",
                             "action": {"action_type": "demo.ledger.close_account",
                                        "target": "ledger:acct-9",
                                        "arguments": {"account": "acct-9"}}})
        assert waiting.approval is not None
        rt.decide_approval(waiting.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                           once=False, resume=False)
        rt.sync_graph()
        return home, list(rt.journal.events()), node("approval", waiting.approval.id)


def test_flags_hold_while_their_condition_does_sync_and_rebuild_alike(
        demo: tuple[Path, list[AuditEvent], str]) -> None:
    home, events, unused = demo
    used = {node("approval", e.payload["approval_id"]) for e in events
            if e.kind == "action.intent" and e.payload.get("approval_id")}
    assert used  # the demo's close_account was approved and ran
    source = read_home_graph(home)  # whichever store the home uses, read into memory
    try:
        text = source.nquads()
    finally:
        source.close()
    synced = OxigraphStore.in_memory()
    synced.store.load(text.encode(), format=ox.RdfFormat.N_QUADS)
    try:
        assert _flagged(synced.store, "awaitsVerification") == set()  # every one verified
        assert _flagged(synced.store, "awaitsUse") == {unused}
        assert not used & _flagged(synced.store, "awaitsUse")
        dump = _projected(synced.store)
    finally:
        synced.close()
    rebuilt = OxigraphStore.in_memory()
    with open_home_journal(home) as journal:
        rebuild(rebuilt, journal)
    assert _projected(rebuilt.store) == dump


def test_an_action_executed_without_its_verification_is_listed(
        demo: tuple[Path, list[AuditEvent], str]) -> None:
    _, events, _ = demo
    dropped = next(e for e in events if e.kind == "verification.recorded"
                   and e.payload["verification"]["status"] == "verified")
    action = dropped.payload["verification"]["execution_id"]
    graph = OxigraphStore.in_memory()  # the projection of a journal that stopped before it
    graph.store.load(project_nquads(e for e in events if e is not dropped).encode(),
                     format=ox.RdfFormat.N_QUADS)
    assert _flagged(graph.store, "awaitsVerification") == {action_node(action)}
    query = QueryCatalog.load().get("unverified-actions")
    listed = {row["action"].value: row for row in execute(graph, query.text,
                                                          bound=bind(query, {}))}
    assert action_node(action)[1:-1] in listed
    row = listed[action_node(action)[1:-1]]
    assert row["verification"] is None and row["verificationStatus"] is None
    # with it recorded, the flag is gone and so is the row
    whole = OxigraphStore.in_memory()
    whole.store.load(project_nquads(events).encode(), format=ox.RdfFormat.N_QUADS)
    assert _flagged(whole.store, "awaitsVerification") == set()
    assert action_node(action)[1:-1] not in {
        row["action"].value for row in execute(whole, query.text, bound=bind(query, {}))}
