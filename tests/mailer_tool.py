"""A tool of idempotency class ``none``, without lookup, that appends each call's key to
``<home>/outbox.txt``: the kind of connector that sends the mail, which must never be
called twice for one key. Registered by test subprocesses and by the runtimes that
recover after them (``tests/test_recovery.py``, ``tests/security/test_55``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cradle_kg import Runtime, ToolCall, ToolSpec
from cradle_kg.crashpoints import crashpoint
from cradle_kg.records import IdempotencyClass, SideEffectClass
from tests.conftest import Echo, EchoOut, _verify_ok


def register_mailer(rt: Runtime, after_effect: Callable[[], None] | None = None) -> None:
    """``test.mailer`` on ``rt``; ``after_effect`` runs once the mail is in the outbox."""
    outbox = Path(rt.home.root) / "outbox.txt"

    def send(call: ToolCall) -> EchoOut:
        with outbox.open("a") as f:
            f.write(call.idempotency_key + "\n")
        crashpoint("during_call")
        if after_effect:
            after_effect()
        return EchoOut()

    if not rt.verifiers.has("test.ok"):
        rt.register_verifier("test.ok", _verify_ok)
    rt.register_tool(ToolSpec(id="test.mailer", version="1", input_model=Echo,
                              output_model=EchoOut, side_effect_class=SideEffectClass.REVERSIBLE,
                              idempotency=IdempotencyClass.NONE, verifier="test.ok",
                              blast_radius=("test:*",), target_from="test:*"), send)
