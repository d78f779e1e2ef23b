"""An approval covers the action under the tool's version it was asked for, no other.

Finding (ninth attack review): an approval is bound to the digest of the exact action —
tool id, target, arguments, environment, dry run — which names no version of the tool. A
pack upgraded while the approval waited (``close_account@1`` reviewed, ``@2`` installed),
or an upstream tool the operator re-pinned after it changed (``mcp proxy``: its version
is ``upstream-<16 hex of its pin>``), ran under the approval given for the old one: the
person approved one behaviour, another ran, unattended.

Now the tool's ``id@version`` at the request is the ``tool_ref`` of the gate-1 decision
that asked (already journaled: no digest, key or event changes), and an approval asked for
under another version covers nothing: the action asks for a person again, and the reasons
say why (`` approval `apr:…` was given for `test.erase@1`, and the tool is now
`test.erase@2` ``). The same version: used as before. An approval whose decision names no
version (none recorded) is used as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime, ToolCall, ToolSpec
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.records import ApprovalStatus, IdempotencyClass, SideEffectClass

from ..conftest import Clock, Echo, EchoOut, _verify_ok, make_config, proposal

pytestmark = pytest.mark.usefixtures("journal_backend")

TESTER = "agent:tester"


class _Home:
    def __init__(self, home: Path, clock: Clock) -> None:
        self.home, self.clock = home, clock
        self.calls: list[str] = []

    def runtime(self, version: str) -> Runtime:
        rt = Runtime(self.home, clock=self.clock)
        rt.register_verifier("test.ok", lambda req: replace(
            _verify_ok(req), read_at=self.clock()))  # read on the test's clock

        def erase(call: ToolCall) -> EchoOut:
            self.calls.append(version)
            return EchoOut()

        rt.register_tool(ToolSpec(
            id="test.erase", version=version, input_model=Echo, output_model=EchoOut,
            side_effect_class=SideEffectClass.IRREVERSIBLE,
            idempotency=IdempotencyClass.NATURAL, blast_radius=("test:*",),
            target_from="test:*", verifier="test.ok"), erase)
        return rt


@pytest.fixture
def place(home: Path, clock: Clock) -> Iterator[_Home]:
    (home / "config.json").write_text(make_config().model_dump_json())
    yield _Home(home, clock)


def _approved(place: _Home) -> str:
    """An erase asked for under `test.erase@1` and approved; the run's id."""
    rt = place.runtime("1")
    try:
        out = rt.submit(proposal("p1", "test.erase", {"value": "all"}, agent=TESTER,
                                 target="test:all"))
        assert out.status is OutcomeStatus.AWAITING_APPROVAL and out.approval is not None
        rt.decide_approval(out.approval.id, approver_id=APPROVER,
                           token=DEMO_TOKENS[APPROVER], status=ApprovalStatus.APPROVED,
                           resume=False)
        return out.run_id
    finally:
        rt.close()


def test_an_approval_does_not_cover_another_version_of_the_tool(place: _Home) -> None:
    run_id = _approved(place)
    place.clock.now += timedelta(minutes=5)
    rt = place.runtime("2")  # the pack upgraded while the approval waited
    try:
        outcomes = rt.resume(run_id)
        assert [o.status for o in outcomes] == [OutcomeStatus.AWAITING_APPROVAL]
        said = " ".join(outcomes[0].reasons)
        assert "given for `test.erase@1`" in said and "now `test.erase@2`" in said, said
        assert place.calls == []
        # asked again, under the version now: a person's approval of it runs it
        again = outcomes[0].approval
        assert again is not None and again.status is ApprovalStatus.PENDING
        place.clock.now += timedelta(minutes=5)
        _, done = rt.decide_approval(again.id, approver_id=APPROVER,
                                     token=DEMO_TOKENS[APPROVER],
                                     status=ApprovalStatus.APPROVED)
        assert done is not None and done.status is OutcomeStatus.EXECUTED, done.model_dump_json()
        assert place.calls == ["2"]
    finally:
        rt.close()


def test_the_same_version_is_covered_as_before(place: _Home) -> None:
    run_id = _approved(place)
    rt = place.runtime("1")
    try:
        assert [o.status for o in rt.resume(run_id)] == [OutcomeStatus.EXECUTED]
        assert place.calls == ["1"]
    finally:
        rt.close()
