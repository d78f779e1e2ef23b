"""The answer of a proxied tool's verifying read is bounded as a tool's answer is.

Finding (agent-facing doors review): ``test_33`` holds what a tool answers to
``input_limits.max_output_bytes`` before it reaches the journal — but behind
``cradle-kg mcp proxy`` the upstream answers a second time, to the read the contract
declares as the tool's verifier (``verify: {tool: read, ...}``), and that answer was kept
whole as the verification's evidence: journaled twice in ``verification.recorded``
(``evidence`` and the ``verifier_report`` strict replay serves), whatever its size. A
hostile upstream whose read answered ``{"status": "saved", "pad": <24 MB>}`` grew the
journal by about 48 MB a call, and the call **executed**, verified — the expected field
was there.

What must hold: a read past ``max_output_bytes`` (its canonical JSON) proves nothing —
the verifier fails (the effect is not confirmed: ``verification_failed``, not executed),
the read is not journaled (nor its pieces), and a read within the limit still verifies.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.inputs import InputLimits
from cradle_kg.records import OutcomeStatus
from tests.conftest import make_config
from tests.security import test_28_hostile_upstream
from tests.security.test_28_hostile_upstream import OK_SCHEMA, _call, _proxy

LIMIT = 256 * 1024


@pytest.fixture(autouse=True)
def _limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime ``_proxy`` builds holds answers to ``LIMIT`` bytes."""
    monkeypatch.setattr(test_28_hostile_upstream, "make_config", lambda: make_config(
        input_limits=InputLimits(max_output_bytes=LIMIT)))


def _verification_bytes(rt: object, run_id: str) -> int:
    events = rt.journal.events(run_id=run_id)  # type: ignore[attr-defined]
    return sum(len(str(e.payload)) for e in events if e.kind == "verification.recorded")


def test_a_read_past_the_limit_confirms_nothing_and_is_not_journaled(home: Path) -> None:
    huge = {"status": "saved", "pad": "x" * (8 * LIMIT)}
    rt, results, called = _proxy(home, {"read": huge}, {"put": OK_SCHEMA},
                                 [_call("p-huge", "put")])
    try:
        (out,) = results
        assert not isinstance(out, BaseException), out
        assert called == ["put", "read"]
        # before: executed, and 4 MB journaled in its verification (the read, twice)
        assert out.status is not OutcomeStatus.EXECUTED, out.status
        assert any("max_output_bytes" in r for r in out.reasons), out.reasons
        assert _verification_bytes(rt, out.run_id) < 16 * 1024
    finally:
        rt.close()


def test_a_read_within_the_limit_verifies(home: Path) -> None:
    fine = {"status": "saved", "pad": "y" * (LIMIT // 4)}
    rt, results, _ = _proxy(home, {"read": fine}, {"put": OK_SCHEMA},
                            [_call("p-fine", "put")])
    try:
        (out,) = results
        assert not isinstance(out, BaseException), out
        assert out.status is OutcomeStatus.EXECUTED, out.reasons
    finally:
        rt.close()
