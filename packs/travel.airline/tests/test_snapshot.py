"""The judge's replay, on a few of the benchmark's reference writes: each call on a fresh
home loaded with the database as it was just before it (no journal history), with the
customer facts its conversation supports; the later calls of a task see the earlier ones.

The actions are copied from τ-bench's ``tasks_test.py`` (MIT; tasks 1, 3, 16, 19): their
full replay is ``replay.py --tasks``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.packs import testing

PACK = testing.pack_folder(__file__)

TASKS: list[dict[str, Any]] = [
    {"user_id": "olivia_gonzalez_2305",  # task 1: insured, feels unwell
     "actions": [{"name": "cancel_reservation", "kwargs": {"reservation_id": "Z7GOZK"}}]},
    {"user_id": "sofia_kim_7287",  # task 3: a change of flights, then one bag more
     "actions": [
         {"name": "update_reservation_flights", "kwargs": {
             "reservation_id": "OBUT9V", "cabin": "economy",
             "flights": [{"flight_number": "HAT078", "date": "2024-05-27"},
                         {"flight_number": "HAT118", "date": "2024-05-27"},
                         {"flight_number": "HAT290", "date": "2024-05-27"},
                         {"flight_number": "HAT175", "date": "2024-05-27"}],
             "payment_id": "gift_card_6276644"}},
         {"name": "update_reservation_baggages", "kwargs": {
             "reservation_id": "OBUT9V", "total_baggages": 2, "nonfree_baggages": 0,
             "payment_id": "gift_card_6276644"}}]},
    {"user_id": "ethan_martin_2396",  # task 16: a delayed flight, three passengers
     "actions": [{"name": "send_certificate",
                  "kwargs": {"user_id": "ethan_martin_2396", "amount": 150}}]},
    {"user_id": "raj_brown_5782",  # task 19: its reference breaks the policy twice
     "actions": [
         {"name": "update_reservation_flights", "kwargs": {
             "reservation_id": "VA5SGQ", "cabin": "economy",
             "flights": [{"flight_number": "HAT169", "date": "2024-05-17"},
                         {"flight_number": "HAT033", "date": "2024-05-19"}],
             "payment_id": "credit_card_8003957"}},
         {"name": "update_reservation_baggages", "kwargs": {
             "reservation_id": "VA5SGQ", "total_baggages": 1, "nonfree_baggages": 1,
             "payment_id": "credit_card_8003957"}}]},
]
FACTS = {0: {"airline:cancellationReason": "health"},
         2: {"airline:compensationRequested": "delayed_flight"}}
BREAKS = {(3, 0): "the destination changes", (3, 1): "a free bag charged"}


@pytest.mark.slow
def test_reference_writes_replayed_on_fresh_homes() -> None:
    with tempfile.TemporaryDirectory() as tmp, testing.pack_home(PACK, Path(tmp) / "h") as h:
        replay = h.entry("replay:replay")
        data = h.entry("db:default_data")()
        rows = list(replay(data, TASKS, facts=FACTS, breaks=BREAKS))
    got = [(r["task"], r["action"], r["status"]) for r in rows]
    assert got == [(0, 0, "executed"), (1, 0, "executed"), (1, 1, "executed"),
                   (2, 0, "executed"), (3, 0, "denied"), (3, 1, "denied")], rows
    codes = {(r["task"], r["action"]): r["codes"] for r in rows}
    assert codes[(3, 0)] == ["airline_route_changed"]
    assert codes[(3, 1)] == ["airline_bag_allowance"]
    # the bag update saw the flights the change before it wrote (the snapshot carried it)
    assert '"flight_number": "HAT078"' in rows[2]["output"]
