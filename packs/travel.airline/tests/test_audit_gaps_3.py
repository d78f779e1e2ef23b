"""The fourth audit, differential: an oracle written from ``wiki.md`` alone
(``oracle_audit.py``) against the pack on 24,214 calls generated from the benchmark's
database (``audit_airline.py``; README, "Fourth audit"). The gap it found (the case failed
before its fix) beside the careful call that must still go through, and the readings the
disagreements were adjudicated to — each pinned with its breaking and its careful call.
Every case is built from the benchmark's data and runs through the governed loop on a
fresh copy of its database."""

from __future__ import annotations

from typing import Any

Airline = Any  # the `airline` fixture (conftest.py): a home, its runner, its database

YES = [["airline:confirmed", "yes"]]
OK = {"status": "executed"}


def _no(*codes: str) -> dict[str, Any]:
    return {"status": "denied", "codes": list(codes)}


def _flights(rid: str, uid: str, cabin: str, flights: list[tuple[str, str]],
             payment: str) -> dict[str, Any]:
    return {"tool": "update_reservation_flights", "on_behalf_of": f"customer:{uid}",
            "facts": YES,
            "arguments": {"reservation_id": rid, "cabin": cabin,
                          "flights": [{"flight_number": n, "date": d} for n, d in flights],
                          "payment_id": payment}}


def _cancel(rid: str, uid: str, reason: str) -> dict[str, Any]:
    return {"tool": "cancel_reservation", "on_behalf_of": f"customer:{uid}",
            "arguments": {"reservation_id": rid},
            "facts": [["airline:confirmed", "yes"], ["airline:cancellationReason", reason]]}


# --- the gap: a flown segment replaced in a change of flights ------------------------------

def test_a_flown_segment_is_not_replaced(airline: Airline) -> None:
    """ "The agent can only cancel the whole trip that is not flown. If any of the segments
    are already used, the agent cannot help and transfer is needed."

    4FCR1O (mohamed_gonzalez_6040, silver, business, 2 passengers) is a round trip MIA-EWR:
    HAT031 landed on 2024-05-11, HAT202 back on 2024-05-21. "Moving the trip" by replacing
    the flown HAT031 with the same flight on 2024-05-16 makes the API subtract the price of
    the flight used (2 passengers at $1,556) and book it again: a used segment refunded.
    Before, it went through (the README listed it as not a rule); the careful change keeps
    the flown segment and moves the return only."""
    uid, card = "mohamed_gonzalez_6040", "credit_card_3382683"
    airline.run(_flights("4FCR1O", uid, "business",
                         [("HAT031", "2024-05-16"), ("HAT202", "2024-05-21")], card),
                **_no("airline_segment_flown"))
    airline.run(_flights("4FCR1O", uid, "business",
                         [("HAT031", "2024-05-11"), ("HAT202", "2024-05-17")], card), **OK)


# --- readings adjudicated (the pack was right; pinned) ---------------------------------------

def test_business_is_cancellable_whatever_reason_is_given(airline: Airline) -> None:
    """ "All reservations can be cancelled within 24 hours of booking, or if the airline
    cancelled the flight. Otherwise, … business flights can always be cancelled."

    018BE2 (juan_taylor_8806, business, no insurance, booked 2024-05-13 17:59, no flight
    cancelled): the customer's "the airline cancelled my flight" is not what the database
    shows, but a business reservation can always be cancelled — it goes through. The same
    statement on H9ZU1C (economy, no insurance, booked 2024-05-01) is refused (the oracle had
    it the other way round: 426 disagreements)."""
    airline.run(_cancel("018BE2", "juan_taylor_8806", "airline_cancelled"), **OK)
    airline.run(_cancel("H9ZU1C", "mia_kim_4397", "airline_cancelled"),
                **_no("airline_reason_contradicted"))


def test_a_record_whose_destination_is_its_origin(airline: Airline) -> None:
    """ "Other reservations can be modified without changing the origin, destination, and
    trip type."

    2E2N7I (isabella_khan_6576) is recorded one way IAH → IAH, flying IAH-SFO then SFO-IAH
    on 2024-05-16 (a few of the benchmark's reservations are recorded so). Another flight
    back SFO-IAH the same day keeps the trip as recorded; dropping the way back ends in SFO
    (the oracle refused both: 46 disagreements)."""
    uid, card = "isabella_khan_6576", "gift_card_9284435"
    airline.run(_flights("2E2N7I", uid, "business", [("HAT072", "2024-05-16")], card),
                **_no("airline_route_changed"))
    airline.run(_flights("2E2N7I", uid, "business",
                         [("HAT072", "2024-05-16"), ("HAT082", "2024-05-16")], card), **OK)


def test_a_delay_certificate_is_for_the_reservation_showing_the_delay(airline: Airline) -> None:
    """ "If the user is silver/gold member … and complains about delayed flights in a
    reservation …, the agent can offer a certificate … with the amount being $50 times the
    number of passengers."

    ethan_martin_2396 (silver, task 16) complains of HAT039, delayed today, in M61CQM
    (3 passengers): $150. His 1-passenger reservations NTIRXF and 3HE6QG have flights that
    left a few minutes late; read as "any reservation with a late flight", $50 — the
    per-passenger amount an agent forgetting the passengers gives — would go through. The
    pack takes the reservation that shows the delay when one does (the reading kept; the
    oracle's wider one disagreed on 14 calls, README)."""
    def cert(amount: int) -> dict[str, Any]:
        return {"tool": "send_certificate", "on_behalf_of": "customer:ethan_martin_2396",
                "arguments": {"user_id": "ethan_martin_2396", "amount": amount},
                "facts": [["airline:confirmed", "yes"],
                          ["airline:compensationRequested", "delayed_flight"]]}
    airline.run(cert(50), **_no("airline_compensation_amount"))
    airline.run(cert(150), **OK)


def test_bags_added_after_a_change_to_a_smaller_allowance(airline: Airline) -> None:
    """ "Checked bag allowance: If the booking user is a regular member, … 1 free checked bag
    for each economy passenger, and 2 free checked bags for each business passenger. … Each
    extra baggage is 50 dollars." / "The user can add but not remove checked bags."

    00GMVN (aarav_brown_5556, regular, business, 1 passenger, 2 bags free) moves to economy,
    then adds a bag: the bag added is the extra one, $50 (nonfree 1). The two bags held
    before were free when added and the change of cabin charged nothing for them; charging
    one of them again now (nonfree 2) is refused — the reading chosen where the text says
    nothing about bags on a change of cabin (README)."""
    uid, card = "aarav_brown_5556", "credit_card_3029145"
    airline.run(_flights("00GMVN", uid, "economy", [("HAT204", "2024-05-21")], card), **OK)

    def bags(nonfree: int) -> dict[str, Any]:
        return {"tool": "update_reservation_baggages", "on_behalf_of": f"customer:{uid}",
                "facts": YES,
                "arguments": {"reservation_id": "00GMVN", "total_baggages": 3,
                              "nonfree_baggages": nonfree, "payment_id": card}}
    airline.run(bags(2), **_no("airline_bag_allowance"))
    airline.run(bags(1), **OK)
