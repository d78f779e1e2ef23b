"""Finding: recovery retried a dangling intent under a tool version that did not make it.

Recovery answers "did the effect happen?" for an intent without its outcome from the tool
as it is registered *now*: its idempotency class, its side-effect class and its lookup.
The intent records the version that was called (``tool``: ``test.mailer@1``), and that
version may differ: the restart after a crash is often the deploy of a fix. A mailer of
idempotency class ``none`` without a lookup (never replayed by itself: a person is asked)
sent a mail and its process died before the observation was written; the restart
registered ``test.mailer@2``, of class ``keyed`` with a lookup that finds the keys *it*
sent. The lookup had no trace of version 1's call, so recovery "called again with the
same key": the mail left twice (two lines in the outbox), and the run read ``executed``.
An approval is bound to a tool's version for the same reason (``test_146``).

Now an intent made by another version of the tool than the one registered is not asked
of the new one, retried or read again: a human task is opened (``reconcile_tool_changed``,
naming both versions) and the run's outcome says ``escalated``, as for a tool that can
never be replayed. The same version recovers as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime, ToolCall, ToolSpec
from cradle_kg.records import IdempotencyClass, OutcomeStatus, SideEffectClass
from cradle_kg.runs import show_run
from tests.conftest import Echo, EchoOut, make_config, proposal
from tests.mailer_tool import register_mailer


class Died(BaseException):
    """The process dies after the mail left, before its observation is written."""


def _die() -> None:
    raise Died


def _sent(home: Path) -> int:
    return (home / "outbox.txt").read_text().count("\n")


def _mailer_v2(rt: Runtime) -> None:
    """The upgrade: keyed, with a lookup that knows the keys it sent itself."""
    outbox = Path(rt.home.root) / "outbox.txt"
    mine = Path(rt.home.root) / "v2-keys.txt"

    def send(call: ToolCall) -> EchoOut:
        with outbox.open("a") as f:
            f.write(call.idempotency_key + "\n")
        with mine.open("a") as f:
            f.write(call.idempotency_key + "\n")
        return EchoOut()

    def lookup(call: ToolCall) -> dict[str, Any] | None:
        known = mine.read_text().split() if mine.exists() else []
        return EchoOut().model_dump() if call.idempotency_key in known else None

    rt.register_tool(ToolSpec(id="test.mailer", version="2", input_model=Echo,
                              output_model=EchoOut, side_effect_class=SideEffectClass.REVERSIBLE,
                              idempotency=IdempotencyClass.KEYED, verifier="test.ok",
                              blast_radius=("test:*",), target_from="test:*"), send,
                     lookup=lookup)


@pytest.mark.parametrize("upgraded", [True, False])
def test_an_intent_of_another_tool_version_is_for_a_person(home: Path, upgraded: bool) -> None:
    (home / "config.json").write_text(make_config().model_dump_json())
    mail = proposal("p-mail", "test.mailer", {"value": "hello"}, agent="agent:tester",
                    target="test:inbox")
    rt = Runtime(home)
    register_mailer(rt, after_effect=_die)
    with pytest.raises(Died):
        rt.submit(mail)
    rt.close()
    assert _sent(home) == 1
    with Runtime(home, recover=False) as rt:
        if upgraded:
            _mailer_v2(rt)
        else:
            register_mailer(rt)
        report = rt.recover()
        assert rt.journal.dangling_intents() == []
        summary, events = show_run(rt.journal, "run:task-p-mail")
    # before (upgraded): "retried", the mail sent again, the run `executed`
    assert [i.result for i in report.items] == ["human_task"], report.to_dict()
    assert _sent(home) == 1
    assert summary.status == OutcomeStatus.ESCALATED
    task = next(e for e in events if e.kind == "human_task.opened")
    if upgraded:
        assert task.payload["code"] == "reconcile_tool_changed"
        assert "test.mailer@1" in task.payload["reason"]
        assert "test.mailer@2" in task.payload["reason"]
    else:  # the same version: class `none`, as before
        assert task.payload["code"] == "reconcile_idempotency_none"
