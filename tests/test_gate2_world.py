"""Issue 14 items 3 and 4: gate 2 reads the world, facts have a life cycle.

Each case runs through the real loop (real journal, real graph store, real SHACL): a tool
whose verifier observed a change outside the radius, a postcondition shape that fails, a
compensation that is not available, a fact the verifier confirms or contradicts — each
caught, and visible in the graph.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cradle_kg import Runtime, ToolSpec, VerifierReport, VerifyRequest
from cradle_kg.records import (
    FactCheck,
    IdempotencyClass,
    OutcomeStatus,
    SideEffectClass,
    VerificationCheck,
    VerificationStatus,
)
from tests.conftest import make_config, proposal

# the journal on each backend (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")

OB = "https://w3id.org/cradle/observed#"
VALUE_SHAPE = f"""
@prefix sh: <http://www.w3.org/ns/shacl#> .
<https://example.org/t#ValueRecorded> a sh:NodeShape ; sh:targetNode <urn:cradle:observed> ;
    sh:sparql [ sh:message "the value read back is not the value asked" ;
        sh:select \"\"\"SELECT $this WHERE {{ <urn:cradle:arguments> <{OB}value> ?v .
            FILTER NOT EXISTS {{ $this <{OB}stored> ?v }} }}\"\"\" ] .
"""


class In(BaseModel):
    value: str = "x"


class Out(BaseModel):
    ok: bool = True


def _ok(changed: tuple[str, ...] | None = None, stored: str | None = None,
        facts: tuple[FactCheck, ...] = (), evidence: bool = True):  # type: ignore[no-untyped-def]
    def verify(req: VerifyRequest) -> VerifierReport:
        args = req.arguments
        assert isinstance(args, In)
        return VerifierReport(
            checks=(VerificationCheck(name="resource_exists", status=VerificationStatus.VERIFIED),
                    VerificationCheck(name="expected_state", status=VerificationStatus.VERIFIED)),
            read_at=datetime.now(UTC), source="test", changed=changed, facts=facts,
            evidence={"stored": stored if stored is not None else args.value} if evidence
            else {})
    return verify


def _tool(rt: Runtime, tool_id: str, verify: Any, **contract: Any) -> None:
    rt.register_verifier(tool_id + ".v", verify)
    spec = dict(version="1", input_model=In, output_model=Out,
                side_effect_class=SideEffectClass.REVERSIBLE,
                idempotency=IdempotencyClass.NATURAL, target_from="test:{value}",
                blast_radius=("test:{value}",), verifier=tool_id + ".v")
    spec.update(contract)
    rt.register_tool(ToolSpec(id=tool_id, **spec), lambda call: Out())


@pytest.fixture
def wrt(home: Path) -> Iterator[Runtime]:
    rt = Runtime(home, config=make_config())
    yield rt
    rt.close()


def _go(rt: Runtime, pid: str, tool: str, value: str = "a", **extra: Any) -> Any:
    return rt.submit(proposal(pid, tool, {"value": value}, agent="agent:tester",
                              target=f"test:{value}", **extra))


def _check(outcome: Any, name: str) -> VerificationCheck:
    assert outcome.verification is not None
    return next(c for c in outcome.verification.checks if c.name == name)


def _ask(rt: Runtime, sparql: str) -> list[dict[str, str]]:
    store = rt.graph()
    assert store is not None
    rows = store.query(sparql)
    names = [v.value for v in rows.variables]
    return [{n: r[n].value for n in names if r[n] is not None} for r in rows]


def test_a_change_the_verifier_observed_outside_the_radius_fails(wrt: Runtime) -> None:
    _tool(wrt, "test.quiet", _ok(changed=("test:a", "test:prod-db")))
    out = _go(wrt, "p-wide", "test.quiet")  # the tool itself reports no side effect
    assert out.status is not OutcomeStatus.EXECUTED
    check = _check(out, "no_forbidden_side_effect")
    assert check.status is VerificationStatus.FAILED
    assert "`test:prod-db`" in check.detail and "`test:a`" in check.detail  # radius filled
    assert out.transition is not None and out.transition.committed_at is None
    rows = _ask(wrt, "SELECT ?l WHERE { ?v <https://w3id.org/cradle#observedChange>/"
                     "<http://www.w3.org/2000/01/rdf-schema#label> ?l }")
    assert {r["l"] for r in rows} == {"test:a", "test:prod-db"}


def test_a_change_inside_the_radius_passes_and_says_what_it_saw(wrt: Runtime) -> None:
    _tool(wrt, "test.inside", _ok(changed=("test:a",)))
    out = _go(wrt, "p-in", "test.inside")
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert _check(out, "no_forbidden_side_effect").detail == "observed changed: `test:a`"


def test_a_failing_postcondition_shape_fails_the_verification(wrt: Runtime) -> None:
    _tool(wrt, "test.post", _ok(stored="something else"), postconditions=(VALUE_SHAPE,))
    out = _go(wrt, "p-post", "test.post")
    assert out.status is not OutcomeStatus.EXECUTED
    check = _check(out, "postconditions")
    assert check.status is VerificationStatus.FAILED
    assert "the value read back is not the value asked" in check.detail
    rows = _ask(wrt, "SELECT ?d WHERE { ?v <https://w3id.org/cradle#postconditions> ?d }")
    assert any("not the value asked" in r["d"] for r in rows)


def test_a_holding_postcondition_and_an_undeclared_one(wrt: Runtime) -> None:
    _tool(wrt, "test.held", _ok(), postconditions=(VALUE_SHAPE,))
    _tool(wrt, "test.none", _ok())
    assert _check(_go(wrt, "p-held", "test.held"), "postconditions").detail == "shapes: held"
    none = _go(wrt, "p-none", "test.none")
    assert _check(none, "postconditions").detail == "not_declared"


def test_a_postcondition_that_does_not_compile_refuses_the_contract(wrt: Runtime) -> None:
    from cradle_kg.errors import InputError
    with pytest.raises(InputError, match="postcondition shapes do not compile"):
        _tool(wrt, "test.badshape", _ok(), postconditions=("this is not turtle",))


def test_compensation_availability_counts_before_the_status(wrt: Runtime) -> None:
    _tool(wrt, "test.comp", _ok(), side_effect_class=SideEffectClass.COMPENSABLE,
          compensation_tool="test.undo_missing")
    out = _go(wrt, "p-comp", "test.comp")
    check = _check(out, "compensation_available")
    assert check.status is VerificationStatus.INCONCLUSIVE
    assert "`test.undo_missing` is not registered" in check.detail
    assert out.verification is not None
    assert out.verification.status is not VerificationStatus.VERIFIED  # it counted
    _tool(wrt, "test.undo", _ok())
    _tool(wrt, "test.comp2", _ok(), side_effect_class=SideEffectClass.COMPENSABLE,
          compensation_tool="test.undo")
    ok = _go(wrt, "p-comp2", "test.comp2")
    assert ok.status is OutcomeStatus.EXECUTED, ok.reasons
    assert "registered and permitted for `agent:tester`" in _check(
        ok, "compensation_available").detail


FACTS = [{"subject": "thing:a", "predicate": "colour", "object": "red", "source": "doc:1"},
         {"subject": "thing:a", "predicate": "size", "object": 3, "source": "doc:1"}]
STATUS = """SELECT ?p ?s ?e WHERE { ?f <https://w3id.org/cradle#factPredicate> ?p ;
    <https://w3id.org/cradle#verificationStatus> ?s .
    OPTIONAL { ?f <https://w3id.org/cradle#isSupportedBy> ?e } }"""


def test_a_confirmed_fact_becomes_verified_with_its_evidence(wrt: Runtime) -> None:
    _tool(wrt, "test.facts", _ok(facts=(FactCheck(fact=0, status="verified"),)))
    out = _go(wrt, "p-fact", "test.facts", facts=FACTS)
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    assert _check(out, "facts").status is VerificationStatus.VERIFIED
    rows = {r["p"]: r for r in _ask(wrt, STATUS)}
    assert rows["colour"]["s"].endswith("#Verified")
    assert out.verification is not None
    assert rows["colour"]["e"].endswith(out.verification.evidence_refs[0].replace(":", "%3A"))
    assert rows["size"]["s"].endswith("#Unverified") and "e" not in rows["size"]


def test_a_fact_of_ids_with_slashes_is_settled_on_its_own_node(wrt: Runtime) -> None:
    # the verification records `<run>/<proposal>/<index>` as it always did; the graph reads
    # it back as the fact's node, whose key escapes each part (tests/security/test_386)
    _tool(wrt, "test.slashes", _ok(facts=(FactCheck(fact=0, status="verified"),)))
    out = _go(wrt, "p/fact%2F", "test.slashes", facts=FACTS, run_id="team/x%")
    assert out.status is OutcomeStatus.EXECUTED, out.reasons
    rows = _ask(wrt, STATUS.replace("WHERE {", "WHERE { ?f a <https://w3id.org/cradle#Fact> ."))
    assert {(r["p"], r["s"].rsplit("#", 1)[1]) for r in rows} == {
        ("colour", "Verified"), ("size", "Unverified")}


def test_a_contradicted_fact_is_rejected_and_fails_gate2(wrt: Runtime) -> None:
    _tool(wrt, "test.contra", _ok(facts=(FactCheck(fact=1, status="contradicted",
                                                   detail="size is 4"),)))
    out = _go(wrt, "p-contra", "test.contra", facts=FACTS)
    assert out.status is not OutcomeStatus.EXECUTED
    assert "size is 4" in _check(out, "facts").detail
    rows = {r["p"]: r for r in _ask(wrt, STATUS)}
    assert rows["size"]["s"].endswith("#Rejected")


def test_a_confirmation_without_evidence_leaves_the_fact_a_candidate(wrt: Runtime) -> None:
    _tool(wrt, "test.noev", _ok(facts=(FactCheck(fact=0, status="verified"),), evidence=False))
    out = _go(wrt, "p-noev", "test.noev", facts=FACTS)
    assert out.status is not OutcomeStatus.EXECUTED  # no evidence: nothing committed
    rows = {r["p"]: r for r in _ask(wrt, STATUS)}
    assert rows["colour"]["s"].endswith("#Unverified")


def test_intent_and_context_are_emitted_and_linked(wrt: Runtime) -> None:
    _tool(wrt, "test.ctx", _ok())
    _go(wrt, "p-ctx", "test.ctx")
    rows = _ask(wrt, """PREFIX cradle: <https://w3id.org/cradle#>
        SELECT ?type ?slot ?env WHERE {
          ?p cradle:hasIntent ?i . ?i a cradle:Intent ; cradle:intentType ?type ;
             cradle:slot ?slot .
          ?d cradle:evaluates ?p ; cradle:evaluates ?c . ?c a cradle:Context ;
             cradle:environment ?env ; cradle:at ?at }""")
    assert rows == [{"type": "test.ctx", "slot": "value", "env": "local"}]
    # the policies of the set in force evaluated that context (VOCABULARY: Policy evaluates
    # Context), each policy node the one the shared graph describes
    policies = _ask(wrt, """PREFIX cradle: <https://w3id.org/cradle#>
        SELECT DISTINCT ?id WHERE {
          ?d cradle:evaluates ?c . ?c a cradle:Context .
          ?pol cradle:evaluates ?c . ?pol a cradle:Policy ; cradle:policyId ?id }""")
    assert policies and all(row["id"] for row in policies)


def test_a_pack_write_tool_without_a_postcondition_is_refused(tmp_path: Path,
                                                              wrt: Runtime) -> None:
    from cradle_kg.errors import ManifestError
    from cradle_kg.packs import load_pack
    folder = tmp_path / "test.nopost"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "mod.py").write_text(
        "from pydantic import BaseModel\n"
        "from cradle_kg.packs.sdk import IdempotencyClass, SideEffectClass, tool\n"
        "class In(BaseModel):\n    value: str = 'x'\n"
        "@tool('test.nopost.write', input_model=In, output_model=In, verifier='v',\n"
        "      side_effect_class=SideEffectClass.IRREVERSIBLE,\n"
        "      idempotency=IdempotencyClass.NATURAL, target_from='test:{value}')\n"
        "def write(ctx, call):\n    return call.arguments\n")
    (folder / "manifest.yaml").write_text(
        "id: test.nopost\nname: t\nversion: 1.0.0\ncore_ontology: '>=0.1.0'\n"
        "tools: ['mod:write']\n")
    with pytest.raises(ManifestError, match="needs at least one postcondition shape"):
        wrt.load_pack(load_pack(folder))


def test_a_verifier_that_observes_no_resource_set_says_so(wrt: Runtime) -> None:
    _tool(wrt, "test.unobserved", _ok(changed=None))
    out = _go(wrt, "p-unobs", "test.unobserved")
    assert _check(out, "no_forbidden_side_effect").detail.startswith("not observed")
