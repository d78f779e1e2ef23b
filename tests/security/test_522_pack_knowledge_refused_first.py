"""A pack whose knowledge does not load puts nothing in force.

Finding: ``test_515`` made ``Runtime.load_pack`` check everything that can refuse a load
before anything is put in force, but the pack's knowledge graphs were still installed
last: on a runtime whose graph store was already open (any runtime that had read its
graph, a server), an ``ontology:`` file that does not parse — or a ``@knowledge`` graph
whose build raises or yields a term that is not one — refused the load *after* the pack's
Cedar policies, its ref on every decision and its declarations were in force: the refused
pack's forbid denied the next credit, and loading it again returned at once, as if loaded.
Now: the ontology's Turtle is parsed once when the pack is prepared, and kept (the store
loads that text, nothing parsed again); with the store open, each knowledge graph that
will be (re)installed is built and checked before the first change, and only written
after. A refused load leaves the runtime as it was, open store or not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.errors import CradleError
from cradle_kg.packs.registry import PackRegistry
from cradle_kg.records import OutcomeStatus

FORBID = '@id("no-credit")\nforbid (principal, action == Action::"demo.ledger.credit", resource);\n'
CODE = '''
from cradle_kg.packs.sdk import iri, knowledge, validator

@validator("demo.ledger.*", name="acme.k.check")
def check(ctx, proposal, spec):
    return []

@knowledge("facts", files=("facts.csv",))
def facts(folder):
    {body}
'''
GOOD_TTL = "@prefix k: <https://example.org/k#> .\nk:Thing a k:Class .\n"
BREAKAGES = {
    "ontology-does-not-parse": ("ontology: [onto.ttl]\n",
                                GOOD_TTL + 'k:a k:b "unclosed .\n', "return []"),
    "knowledge-build-raises": ("knowledge: ['code:facts']\n", GOOD_TTL,
                               "raise RuntimeError('no facts today')"),
    "knowledge-bad-term": ("knowledge: ['code:facts']\n", GOOD_TTL,
                           "return [(iri('https://example.org/s'), '<p> <q>', iri('x:o'))]"),
}


def _refused_pack(root: Path, breakage: str) -> None:
    tail, turtle, body = BREAKAGES[breakage]
    folder = root / "packs" / "k"
    folder.mkdir(parents=True)
    (folder / "manifest.yaml").write_text(
        "id: acme.k\nname: k\nversion: 1.0.0\ncore_ontology: '>=0.1.0'\n"
        "policies: [no-credit.cedar]\nvalidators: ['code:check']\n" + tail, encoding="utf-8")
    (folder / "no-credit.cedar").write_text(FORBID, encoding="utf-8")
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "code.py").write_text(CODE.format(body=body), encoding="utf-8")
    (folder / "onto.ttl").write_text(turtle, encoding="utf-8")
    (folder / "facts.csv").write_text("a,b\n", encoding="utf-8")


def _credit(rt: Runtime, n: str) -> OutcomeStatus:
    out = rt.submit({"id": "p-" + n, "task_id": "task-" + n, "agent_id": AGENT,
                     "action": {"action_type": "demo.ledger.credit", "target": "ledger:acct-k",
                                "arguments": {"account": "acct-k", "amount": 3}}})
    assert out.decision is not None
    assert "acme.k@1.0.0" not in out.decision.pack_versions, out.decision.pack_versions
    return out.status


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_a_refused_load_on_an_open_store_leaves_nothing_in_force(tmp_path: Path,
                                                                  breakage: str) -> None:
    root = tmp_path / "home"
    prepare_home(root)
    _refused_pack(root, breakage)
    pack = PackRegistry.discover(root).get("acme.k")
    with Runtime(root) as rt:
        assert rt.graph() is not None  # the store is open, as in a server
        before = list(rt.pack_versions)
        with pytest.raises(CradleError):
            rt.load_pack(pack)
        assert rt.pack_versions == before
        # before: DENIED, "forbidden by policy `acme.k/no-credit`" — the refused pack's rule
        assert _credit(rt, breakage) is OutcomeStatus.EXECUTED
        with pytest.raises(CradleError):  # before: returned at once, as if loaded
            rt.load_pack(pack)


def test_an_ontology_that_does_not_parse_refuses_the_load_with_the_store_closed(
        tmp_path: Path) -> None:
    """Refused when the pack loads, not first when the store opens (with the pack in
    force): the same answer whether or not the store was open."""
    root = tmp_path / "home"
    prepare_home(root)
    _refused_pack(root, "ontology-does-not-parse")
    pack = PackRegistry.discover(root).get("acme.k")
    with Runtime(root, graph_sync=False) as rt:
        with pytest.raises(CradleError, match=r"onto\.ttl"):
            rt.load_pack(pack)
        assert _credit(rt, "closed") is OutcomeStatus.EXECUTED


def test_a_pack_whose_knowledge_loads_is_in_force_and_its_graphs_installed(
        tmp_path: Path) -> None:
    """The control: the same pack with a good ontology and graph loads, its forbid
    denies, and both graphs are in the store."""
    root = tmp_path / "home"
    prepare_home(root)
    _refused_pack(root, "ontology-does-not-parse")
    folder = root / "packs" / "k"
    (folder / "onto.ttl").write_text(GOOD_TTL, encoding="utf-8")
    manifest = folder / "manifest.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8") + "knowledge: ['code:facts']\n",
                        encoding="utf-8")
    (folder / "code.py").write_text(CODE.format(
        body="return [(iri('https://example.org/s'), iri('https://example.org/p'), "
             "iri('https://example.org/o'))]"), encoding="utf-8")
    pack = PackRegistry.discover(root).get("acme.k")
    with Runtime(root) as rt:
        store = rt.graph()
        assert store is not None
        rt.load_pack(pack)
        assert "acme.k@1.0.0" in rt.pack_versions
        out = rt.submit({"id": "p-ok", "task_id": "task-ok", "agent_id": AGENT,
                         "action": {"action_type": "demo.ledger.credit",
                                    "target": "ledger:acct-k",
                                    "arguments": {"account": "acct-k", "amount": 3}}})
        assert out.status is OutcomeStatus.DENIED
        for name in ("ontology", "facts"):
            graph = f"https://w3id.org/cradle/pack/acme.k/1.0.0/{name}"
            assert store.knowledge_digest(graph) is not None, name
