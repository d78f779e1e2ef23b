"""``travel.airline``: two calls racing cannot both pass a rule that only one may.

Finding (twenty-fifth review, the airline's compensation rules): gate 1 decides a write on
the airline database as it is then, and the tool writes later, in a transaction of its
own that did not ask the policy again. Two calls of one agent at once — an MCP client runs
8 of an agent's calls at once, a model emitting parallel tool calls, two workers — each
passed gate 1 before either wrote: ``isabella_garcia_4633`` (silver, a cancelled flight,
one passenger) complained once and got two $100 certificates, where "a gesture is offered
once" (``airline_compensation_repeated``) refuses the second when they come one after the
other. The same window let a change of flights or bags write to a reservation another call
had just cancelled (``airline_already_cancelled``), charging its card.

Now the tool asks the pack's rules again inside its write transaction (the airline's
writes are serialized there), with the customer's statements gate 1 read for this call:
what the policy refuses on the database as it now is, is not written (``ToolError``,
nothing applied, the refusal named). One certificate is issued; the call that came second
is not executed.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from .airline_calls import YES, airline_runtime, reservation, submit

pytestmark = pytest.mark.usefixtures("journal_backend")

UID = "isabella_garcia_4633"
COMPLAINT = [*YES, ["airline:compensationRequested", "cancelled_flight"]]


def _pack_rules() -> Any:
    """The loaded pack's ``rules`` module (imported under a name of the loader's)."""
    [mod] = [m for name, m in list(sys.modules.items())
             if name.endswith(".rules") and hasattr(m, "effective_cabin")
             and hasattr(m, "findings") and name.startswith("cradle_pack_travel")]
    return mod


def _certificates(rt: Any) -> list[str]:
    import sqlite3
    from contextlib import closing

    path = rt.home.root / "travel-airline" / "airline.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        doc = json.loads(conn.execute("SELECT doc FROM users WHERE user_id = ?",
                                      (UID,)).fetchone()[0])
    return sorted(p for p, m in doc["payment_methods"].items()
                  if m["source"] == "certificate" and m.get("amount") == 100)


def test_one_complaint_one_certificate_when_two_calls_race(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with airline_runtime(tmp_path) as rt:
        before = _certificates(rt)
        rules = _pack_rules()
        decided = rules.findings
        both_decided = threading.Barrier(2, timeout=30)
        first = threading.local()

        def gate_one_then_wait(view: Any, call: Any) -> Any:
            out = decided(view, call)
            if not getattr(first, "done", False):  # each call's gate 1: wait for the other's
                first.done = True
                both_decided.wait()
            return out

        monkeypatch.setattr(rules, "findings", gate_one_then_wait)
        answers: dict[int, tuple[str, list[str]]] = {}

        def certificate(i: int) -> None:
            answers[i] = submit(rt, "send_certificate", UID, {"user_id": UID, "amount": 100},
                                COMPLAINT)

        racing = [threading.Thread(target=certificate, args=(i,)) for i in range(2)]
        for t in racing:
            t.start()
        for t in racing:
            t.join(timeout=120)
        statuses = sorted(status for status, _ in answers.values())
        # before: ['executed', 'executed'] and two $100 certificates for one complaint
        assert statuses.count("executed") == 1, answers
        assert len(_certificates(rt)) == len(before) + 1
        monkeypatch.setattr(rules, "findings", decided)
        # one after the other, as before: the second is refused at gate 1
        assert submit(rt, "send_certificate", UID, {"user_id": UID, "amount": 100},
                      COMPLAINT) == ("denied", ["airline_compensation_repeated"])


def test_no_change_lands_on_a_reservation_cancelled_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``4WQ150`` (chen_jackson_3290, silver, business, 3 passengers, 5 bags, 9 free): a
    change to 10 bags (one non-free: $50) passes gate 1; the cancellation lands before it
    writes. Before: both executed — the cancelled reservation was charged $50 after its
    refunds. Now the change is not written."""
    uid, rid = "chen_jackson_3290", "4WQ150"
    with airline_runtime(tmp_path) as rt:
        rules = _pack_rules()
        decided = rules.findings
        allowed, cancelled = threading.Event(), threading.Event()
        first = threading.local()

        def bags_wait_for_the_cancellation(view: Any, call: Any) -> Any:
            out = decided(view, call)
            if call.tool == "update_reservation_baggages" and not getattr(first, "done", False):
                first.done = True
                allowed.set()
                assert cancelled.wait(timeout=120)
            return out

        monkeypatch.setattr(rules, "findings", bags_wait_for_the_cancellation)
        answer: list[tuple[str, list[str]]] = []
        bags = threading.Thread(target=lambda: answer.append(submit(
            rt, "update_reservation_baggages", uid, {
                "reservation_id": rid, "total_baggages": 10, "nonfree_baggages": 1,
                "payment_id": "gift_card_3576581"})))
        bags.start()
        assert allowed.wait(timeout=120)
        assert submit(rt, "cancel_reservation", uid, {"reservation_id": rid},
                      [*YES, ["airline:cancellationReason", "change_of_plan"]]) == ("executed", [])
        cancelled.set()
        bags.join(timeout=120)
        doc = json.loads(reservation(rt, rid))
        # before: ('executed', []), and the cancelled reservation's payments summed to 50
        assert answer and answer[0][0] != "executed", answer
        assert doc["status"] == "cancelled" and doc["total_baggages"] == 5
        assert sum(p["amount"] for p in doc["payment_history"]) == 0
