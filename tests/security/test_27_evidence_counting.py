"""Evidence an agent cites is counted once, however often it is cited.

Finding: gate 1's evidence check counted the *entries* of ``evidence_refs``, not the
blobs. A tool declared ``requires_evidence=2`` (or a Cedar policy annotated
``@requires_evidence("2")``, or one that reads ``context.evidence_count >= 2``) ran on
one document cited twice — ``"evidence_refs": [ref, ref]`` — the second pair of eyes the
operator asked for was the same page. Now an evidence item is a distinct blob: a ref
cited twice is one item in the check, in ``context.evidence_count`` and in the reasons.

What holds (checked here): a ref that is not in the store, or that was never journaled
as collected, is no evidence; two distinct fresh blobs pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime, ToolSpec
from cradle_kg.config import RuntimeConfig
from cradle_kg.loop.context import Clock
from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass
from tests.conftest import TEST_POLICY, Echo, EchoOut, make_config, proposal, register_test_tools

pytestmark = pytest.mark.usefixtures("journal_backend")

COUNT_POLICY = """
@id("two-documents")
permit(principal, action, resource)
  when { context.tool == "test.counted" && context.evidence_count >= 2 };
"""


def _runtime(home: Path, clock: Clock | None = None,
             config: RuntimeConfig | None = None) -> Runtime:
    (home / "policies" / "test.cedar").write_text(
        TEST_POLICY.replace('like "test.*"', 'like "test.*" && context.tool != "test.counted"')
        + COUNT_POLICY)
    rt = Runtime(home, config=config or make_config(), clock=clock)
    register_test_tools(rt)
    common = dict(version="1", input_model=Echo, output_model=EchoOut,
                  side_effect_class=SideEffectClass.REVERSIBLE,
                  idempotency=IdempotencyClass.NATURAL, blast_radius=("test:*",),
                  target_from="test:*", verifier="test.ok")
    rt.register_tool(ToolSpec(id="test.two_docs", requires_evidence=2, **common),  # type: ignore[arg-type]
                     lambda call: EchoOut())
    rt.register_tool(ToolSpec(id="test.counted", **common),  # type: ignore[arg-type]
                     lambda call: EchoOut())
    return rt


def _call(pid: str, tool: str, refs: list[str]) -> dict[str, object]:
    return proposal(pid, tool, {"value": "x"}, agent="agent:tester", target="test:a",
                    evidence_refs=refs)


def _executions(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events() if e.kind == "action.intent")


def test_one_document_cited_twice_is_one_evidence_item(home: Path) -> None:
    rt = _runtime(home)
    try:
        ref = rt.add_evidence(b"the invoice", kind="document", collector="user:alice")
        out = rt.submit(_call("p-dup", "test.two_docs", [ref, ref]))
        assert out.status is not OutcomeStatus.EXECUTED
        assert out.decision is not None
        assert "evidence_missing" in out.decision.reason_codes
        assert any("1 given" in r for r in out.reasons), out.reasons
        assert _executions(rt) == 0
    finally:
        rt.close()


def test_cedar_evidence_count_counts_distinct_blobs(home: Path) -> None:
    rt = _runtime(home)
    try:
        ref = rt.add_evidence(b"the invoice", kind="document", collector="user:alice")
        out = rt.submit(_call("p-cnt", "test.counted", [ref, ref, ref]))
        assert out.status is OutcomeStatus.DENIED, out.reasons
        assert _executions(rt) == 0
    finally:
        rt.close()


def test_two_distinct_fresh_documents_pass_and_unknown_refs_do_not(home: Path) -> None:
    rt = _runtime(home)
    try:
        a = rt.add_evidence(b"the invoice", kind="document", collector="user:alice")
        b = rt.add_evidence(b"the receipt", kind="document", collector="user:alice")
        stored_only = rt.evidence.put(b"never journaled")  # in the store, never collected
        missing = "sha256:" + "0" * 64
        for pid, refs in (("p-a", [a, stored_only]), ("p-b", [a, missing])):
            out = rt.submit(_call(pid, "test.two_docs", refs))
            assert out.status is not OutcomeStatus.EXECUTED, (refs, out.reasons)
        assert _executions(rt) == 0
        assert rt.submit(_call("p-ok", "test.two_docs", [a, b])).status \
            is OutcomeStatus.EXECUTED
        assert rt.submit(_call("p-ok2", "test.counted", [a, b])).status \
            is OutcomeStatus.EXECUTED
    finally:
        rt.close()
