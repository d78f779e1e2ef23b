"""The policy set in force is journaled whenever it changes — back and forth too."""

from __future__ import annotations

from pathlib import Path

from cradle_kg import Runtime

from .conftest import make_config, proposal


def _activations(home: Path) -> list[str]:
    with Runtime(home, config=make_config()) as rt:
        return [e.payload["version"] for e in rt.journal.events()
                if e.kind == "policyset.activated"]


def test_switching_policies_back_and_forth_is_recorded(home: Path) -> None:
    extra = home / "policies" / "extra.cedar"

    def submit(pid: str) -> str:
        with Runtime(home, config=make_config()) as rt:
            out = rt.submit(proposal(pid, "demo.ledger.credit", {"account": "a", "amount": 1}))
            assert out.decision is not None
            return out.decision.policy_version

    a = submit("p1")
    extra.write_text('@id("extra")\npermit(principal, action == Action::"nothing", resource);\n')
    b = submit("p2")
    extra.unlink()
    a_again = submit("p3")
    assert a == a_again != b
    assert _activations(home) == [a, b, a]
    assert submit("p4") == a
    assert _activations(home) == [a, b, a]  # unchanged policies: no new activation
