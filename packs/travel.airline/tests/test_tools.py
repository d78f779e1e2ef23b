"""The tools answer as the benchmark's API does; writes happen once per key; the verifiers
read the database back through their own connection and catch what it does not show."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from cradle_kg.packs import testing
from cradle_kg.packs.sdk import PackContext, VerificationStatus, VerifyRequest

PACK = testing.pack_folder(__file__)
Airline = Any  # the `airline` fixture (conftest.py): a home, its runner, its database

MIA = "customer:mia_li_3668"
BOOK = {"user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA",
        "flight_type": "one_way", "cabin": "economy",
        "flights": [{"flight_number": "HAT136", "date": "2024-05-20"},
                    {"flight_number": "HAT039", "date": "2024-05-20"}],
        "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
        "payment_methods": [{"payment_id": "credit_card_4421486", "amount": 255}],
        "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}


def _read(airline: Airline, tool: str, **arguments: object) -> str:
    out = airline.run({"tool": tool, "arguments": arguments, "on_behalf_of": None},
                      status="executed")
    return str(out["output"])


def test_reads_answer_as_the_benchmark(airline: Airline) -> None:
    assert _read(airline, "get_reservation_details", reservation_id="NOSUCH") == (
        "Error: user not found")  # sic: the benchmark's message
    assert json.loads(_read(airline, "get_user_details", user_id="mia_li_3668"))[
        "membership"] == "gold"
    found = json.loads(_read(airline, "search_direct_flight", origin="JFK", destination="SEA",
                             date="2024-05-20"))
    assert found and all(f["status"] == "available" and "prices" in f for f in found)
    pairs = json.loads(_read(airline, "search_onestop_flight", origin="JFK",
                             destination="SEA", date="2024-05-20"))
    assert any(a["flight_number"] == "HAT136" and b["flight_number"] == "HAT039"
               for a, b in pairs)
    assert len(json.loads(_read(airline, "list_all_airports"))) == 20
    assert _read(airline, "calculate", expression="2 * (3 + 4) / 4") == "3.5"
    assert _read(airline, "calculate", expression="2 ** 3 + 7 // 2") == "11.0"
    assert _read(airline, "calculate", expression="1 / 0") == "Error: division by zero"
    assert _read(airline, "calculate", expression="__import__('os')") == (
        "Error: invalid characters in expression")
    assert _read(airline, "transfer_to_human_agents", summary="x") == "Transfer successful"


def test_bookings_take_the_benchmark_ids_and_pay(airline: Airline) -> None:
    yes = [["airline:confirmed", "yes"]]
    first = airline.run({"tool": "book_reservation", "arguments": BOOK, "on_behalf_of": MIA,
                         "facts": yes}, status="executed")
    second = airline.run({"tool": "book_reservation", "arguments": BOOK, "on_behalf_of": MIA,
                          "facts": yes, "task_id": "another"}, status="executed")
    ids = [json.loads(str(o["output"]))["reservation_id"] for o in (first, second)]
    assert ids == ["HATHAT", "HATHAU"]
    res = airline.db.reservation("HATHAT")
    assert res is not None and res["created_at"] == "2024-05-15T15:00:00"
    user = airline.db.user("mia_li_3668")
    assert user is not None and user["reservations"][-2:] == ["HATHAT", "HATHAU"]


def test_one_key_one_effect(airline: Airline) -> None:
    proposal = airline.proposal({"tool": "cancel_reservation", "on_behalf_of":
                                 "customer:olivia_gonzalez_2305",
                                 "arguments": {"reservation_id": "Z7GOZK"},
                                 "facts": [["airline:confirmed", "yes"],
                                           ["airline:cancellationReason", "health"]]},
                                pid="once")
    rt = airline.home.runtime
    assert str(rt.submit(proposal).status) == "executed"
    again = rt.submit(proposal)
    assert str(again.status) == "executed"
    res = airline.db.reservation("Z7GOZK")
    assert res is not None and len(res["payment_history"]) == 2  # one refund, not two


def test_the_verifier_reads_the_database_not_the_claim(airline: Airline) -> None:
    done = airline.home.runtime.submit(airline.proposal(
        {"tool": "cancel_reservation", "on_behalf_of": "customer:olivia_gonzalez_2305",
         "arguments": {"reservation_id": "Z7GOZK"},
         "facts": [["airline:confirmed", "yes"], ["airline:cancellationReason", "health"]]}))
    assert done.action is not None and done.verification is not None
    assert done.verification.status is VerificationStatus.VERIFIED
    kinds = [c["kind"] for c in airline.db.changes(done.action.idempotency_key)]
    assert kinds == ["reservation", "refund"]
    # someone puts the reservation back behind the API's back: the same read now fails
    res = airline.db.reservation("Z7GOZK")
    assert res is not None
    res.pop("status")
    with airline.db.writing() as conn:
        conn.execute("UPDATE reservations SET doc = ? WHERE reservation_id = 'Z7GOZK'",
                     (json.dumps(res),))
    verify = airline.home.entry("tools:cancelled")
    model = airline.home.entry("models:ReservationId")
    ctx = PackContext(pack_id="travel.airline", version="1.0.0", folder=PACK,
                      home=airline.home.root, clock=lambda: datetime.now(UTC))
    report = verify.body(ctx, VerifyRequest(action=done.action,
                                            arguments=model(reservation_id="Z7GOZK"),
                                            claimed_output=None,
                                            executed_at=datetime.now(UTC)))
    states = {c.name: c.status for c in report.checks}
    assert states["expected_state"] is VerificationStatus.FAILED
