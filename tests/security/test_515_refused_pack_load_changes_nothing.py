"""A pack whose load is refused puts nothing in force.

Finding: ``Runtime.load_pack`` put the pack's Cedar policies in force first, then read its
graph policies, added its ref to the versions every decision journals, and registered its
declarations one by one. A graph policy that did not parse, or a verifier (or tool) id
another pack already holds, refused the load *after* that: the refused pack's policies
decided the next call (its forbid denied the demo's credit, cited as `acme.b/...`), and for
a registration conflict its ref was journaled on every decision (`pack_versions`) and a
second ``load_pack`` of it returned at once, as if loaded — though the runtime's own
docstring (and the README) says a refused pack changes nothing. Only a Python embedding
that catches the error and goes on meets it (a home's ``packs:`` closes the runtime).
Now: everything that can refuse the load is read and checked first — the pack's
declarations (ids free in this runtime and within the pack, each contract's
postconditions compiled), its graph policies, its shapes with the rules in force — and the
runtime is changed only after, each change atomic.
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
from cradle_kg.packs.sdk import validator, verifier

@validator("demo.ledger.*", name="acme.b.check")
def check(ctx, proposal, spec):
    return []

@verifier("{verifier_id}")
def read(ctx, request):
    raise NotImplementedError
'''
#: what refuses each load, after the pack's policies were put in force
BREAKAGES = {
    "graph-policy-does-not-parse": ("acme.b.read", "graph_policies: [bad.rq]\n"),
    "verifier-id-taken": ("demo.ledger.entry-recorded", ""),
    "shapes-on-core-terms": ("acme.b.read", "shapes: [bad.ttl]\n"),
}


def _refused_pack(root: Path, breakage: str) -> None:
    verifier_id, tail = BREAKAGES[breakage]
    folder = root / "packs" / "b"
    folder.mkdir(parents=True)
    (folder / "manifest.yaml").write_text(
        "id: acme.b\nname: b\nversion: 1.0.0\ncore_ontology: '>=0.1.0'\n"
        "policies: [no-credit.cedar]\nvalidators: ['code:check']\nverifiers: ['code:read']\n"
        + tail, encoding="utf-8")
    (folder / "no-credit.cedar").write_text(FORBID, encoding="utf-8")
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "code.py").write_text(CODE.format(verifier_id=verifier_id), encoding="utf-8")
    (folder / "bad.rq").write_text('# @verdict("deny")\nASK { ?s ?p }\n', encoding="utf-8")
    (folder / "bad.ttl").write_text(
        "@prefix cradle: <https://w3id.org/cradle#> .\n"
        "@prefix sh: <http://www.w3.org/ns/shacl#> .\n"
        "cradle:Rule1Shape sh:deactivated true .\n", encoding="utf-8")


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_a_refused_load_leaves_the_runtime_as_it_was(tmp_path: Path, breakage: str) -> None:
    root = tmp_path / "home"
    prepare_home(root)
    _refused_pack(root, breakage)
    pack = PackRegistry.discover(root).get("acme.b")
    with Runtime(root) as rt:
        before = list(rt.pack_versions)
        with pytest.raises(CradleError):
            rt.load_pack(pack)
        assert rt.pack_versions == before
        out = rt.submit({"id": "p-" + breakage, "task_id": "task-" + breakage,
                         "agent_id": AGENT,
                         "action": {"action_type": "demo.ledger.credit",
                                    "target": "ledger:acct-f",
                                    "arguments": {"account": "acct-f", "amount": 3}}})
        # before: DENIED, "forbidden by policy `acme.b/no-credit`" — the refused pack's rule
        assert out.status is OutcomeStatus.EXECUTED, out.reasons
        assert out.decision is not None
        assert "acme.b@1.0.0" not in out.decision.pack_versions
        with pytest.raises(CradleError):  # before (a conflict): returned, as if loaded
            rt.load_pack(pack)
