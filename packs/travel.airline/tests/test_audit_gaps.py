"""A second audit of the rules against ``wiki.md``, sentence by sentence: the gaps it found
(each case failed before its fix) and the careful agent's calls next to them that must go
through. Every case is built from the benchmark's data and runs through the governed loop
on a fresh copy of its database."""

from __future__ import annotations

from typing import Any

import pytest

Airline = Any  # the `airline` fixture (conftest.py): a home, its runner, its database

YES = [["airline:confirmed", "yes"]]
OK = {"status": "executed"}


def _no(*codes: str) -> dict[str, Any]:
    return {"status": "denied", "codes": list(codes)}


def _book(uid: str, segments: list[tuple[str, str]], origin: str, destination: str,
          pays: list[tuple[str, float]], cabin: str = "economy") -> dict[str, Any]:
    return {"tool": "book_reservation", "on_behalf_of": f"customer:{uid}", "facts": YES,
            "arguments": {"user_id": uid, "origin": origin, "destination": destination,
                          "flight_type": "one_way", "cabin": cabin,
                          "flights": [{"flight_number": n, "date": d} for n, d in segments],
                          "passengers": [{"first_name": "Ann", "last_name": "Lee",
                                          "dob": "1990-04-05"}],
                          "payment_methods": [{"payment_id": p, "amount": a} for p, a in pays],
                          "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}}


# aarav_lee_3563 (regular): gift_card_6737013 ($262), credit_card_7195750; HAT141 MSP→EWR
# on 2024-05-20 costs 161 in economy. mia_li_3668 (gold): certificate_4856383 ($100),
# credit_card_4421486; HAT069 JFK→SEA on 2024-05-20 costs 121 in economy.
AARAV = ("aarav_lee_3563", [("HAT141", "2024-05-20")], "MSP", "EWR")
MIA = ("mia_li_3668", [("HAT069", "2024-05-20")], "JFK", "SEA")

CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # "Payment: each reservation can use at most one travel certificate, at most one credit
    # card, and at most three gift cards." — a payment method is charged the amount: a
    # negative amount credits a gift card ($100 moved onto it, the card charged $100 more)
    "book: a gift card charged -100, the credit card 261":
        (_book(*AARAV, [("gift_card_6737013", -100), ("credit_card_7195750", 261)]),
         _no("airline_payment_amount")),
    # a certificate "used" for 0 is consumed by the API ("The remaining amount of a travel
    # certificate is not refundable"): the customer loses it for nothing
    "book: a certificate charged 0, the credit card 121":
        (_book(*MIA, [("certificate_4856383", 0), ("credit_card_4421486", 121)]),
         _no("airline_payment_amount")),
    # "… at most three gift cards" counts a gift card listed twice as two, and the API checks
    # each line against the balance, not their sum: gift_card_6737013 holds $262 and pays
    # 200 + 190 of a $390 business fare — it would be left at -$128
    "book: one gift card listed twice, overdrawn":
        (_book(*AARAV, [("gift_card_6737013", 200), ("gift_card_6737013", 190)],
               cabin="business"), _no("airline_payment_balance")),
    "book: one gift card listed twice within its balance (careful)":
        (_book(*AARAV, [("gift_card_6737013", 100), ("gift_card_6737013", 61)]), OK),
    "book: the gift card 100 and the credit card 61 (careful)":
        (_book(*AARAV, [("gift_card_6737013", 100), ("credit_card_7195750", 61)]), OK),
    "book: the certificate 100 and the credit card 21 (careful)":
        (_book(*MIA, [("certificate_4856383", 100), ("credit_card_4421486", 21)]), OK),
    # "Payment: If the flights are changed, the user needs to provide one gift card or credit
    # card": 8B92J5 (aarav_lee_3563, economy, MSP→EWR) moved from HAT196 to HAT141 the same
    # day, the $2 difference refunded to the gift card of the profile
    "flights: an economy change refunded to a gift card of the profile (careful)":
        ({"tool": "update_reservation_flights", "on_behalf_of": "customer:aarav_lee_3563",
          "facts": YES,
          "arguments": {"reservation_id": "8B92J5", "cabin": "economy",
                        "payment_id": "gift_card_6737013",
                        "flights": [{"flight_number": "HAT141", "date": "2024-05-20"}]}}, OK),
    # "If the user is silver/gold member … and complains about cancelled flights in a
    # reservation … $100 times the number of passengers": mohamed_taylor_9830 (gold), KY93IV
    # (economy, not insured, 2 passengers) has HAT069 cancelled on 2024-05-11
    "certificate: a gold member's cancelled flight, 2 passengers (careful)":
        ({"tool": "send_certificate", "on_behalf_of": "customer:mohamed_taylor_9830",
          "arguments": {"user_id": "mohamed_taylor_9830", "amount": 200},
          "facts": [["airline:confirmed", "yes"],
                    ["airline:compensationRequested", "cancelled_flight"]]}, OK),
    # "available seats … are listed": HAT141 on 2024-05-20 has one economy seat left
    "book: two passengers on a flight with one economy seat — the API's error":
        ({**_book(*AARAV, [("credit_card_7195750", 322)]),
          "arguments": {**_book(*AARAV, [("credit_card_7195750", 322)])["arguments"],
                        "passengers": [{"first_name": "Ann", "last_name": "Lee",
                                        "dob": "1990-04-05"},
                                       {"first_name": "Bo", "last_name": "Lee",
                                        "dob": "1992-01-01"}]}},
         {"status": "verification_failed", "codes": [],
          "output": "Error: not enough seats on flight HAT141"}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_audit_case(airline: Airline, name: str) -> None:
    call, expect = CASES[name]
    airline.run(call, **expect)


def _certificate(uid: str, amount: int, ground: str) -> dict[str, Any]:
    return {"tool": "send_certificate", "on_behalf_of": f"customer:{uid}",
            "arguments": {"user_id": uid, "amount": amount},
            "facts": [["airline:confirmed", "yes"], ["airline:compensationRequested", ground]]}


def test_a_certificate_spent_still_counts(airline: Airline) -> None:
    """ "the agent can offer a certificate as a gesture … $100 times the number of
    passengers": noah_silva_2256 (silver) has one reservation with a cancelled flight
    (GYJ4P7, 3 passengers): $300, once. Spent whole on a booking, the certificate is gone
    from the profile (the API deletes it) — before, a second $300 for the same complaint
    went through; the booking's payment history still names it."""
    noah = "noah_silva_2256"
    airline.run(_certificate(noah, 300, "cancelled_flight"), **OK)
    airline.run(_book(noah, [("HAT141", "2024-05-20")], "MSP", "EWR",
                      [("certificate_3221322", 300), ("credit_card_7773542", 90)],
                      cabin="business"), **OK)
    airline.run(_certificate(noah, 300, "cancelled_flight"),
                **_no("airline_compensation_repeated"))


def test_a_spent_certificate_of_another_amount_does_not_count(airline: Airline) -> None:
    """The careful twin: a booking paid with the gift card and the credit card of the
    profile first; the $300 for the cancelled flight still goes through."""
    noah = "noah_silva_2256"
    airline.run(_book(noah, [("HAT141", "2024-05-20")], "MSP", "EWR",
                      [("gift_card_9130446", 100), ("credit_card_7773542", 61)]), **OK)
    airline.run(_certificate(noah, 300, "cancelled_flight"), **OK)


def test_the_benchmarks_think_tool_goes_through(airline: Airline) -> None:
    """The benchmark's agent has 14 tools (`tau_bench/envs/airline/tools/__init__.py` at the
    pinned commit lists `think`, "It will not obtain new information or change the
    database"); gpt-4o's published airline trajectories call it 92 times. Before, every such
    call was `denied` (`unknown_tool`); now it answers "" as the benchmark does."""
    out = airline.run({"tool": "think", "arguments": {"thought": "IFOYYZ is basic economy, "
                       "booked more than 24 hours ago, without insurance"},
                       "on_behalf_of": None}, status="executed")
    assert out["output"] == ""


def test_a_delay_nothing_confirms(airline: Airline) -> None:
    """ "complains about delayed flights in a reservation … the agent can offer a certificate
    as a gesture after confirming the facts": mia_li_3668 (gold) has three reservations, all
    ahead, none delayed, none changed. Before, a $50 "delay" certificate went through (when
    no reservation showed a delay, any reservation counted); now nothing confirms it."""
    airline.run(_certificate("mia_li_3668", 50, "delayed_flight"),
                **_no("airline_compensation_contradicted"))


def test_a_delay_on_a_flight_that_left_late(airline: Airline) -> None:
    """Task 45's facts: noah_muller_9847 (gold) — 4OG6T3's HAT006 took off 27 minutes late
    on 2024-05-11 (landed); its one passenger: $50."""
    airline.run(_certificate("noah_muller_9847", 100, "delayed_flight"),
                **_no("airline_compensation_amount"))
    airline.run(_certificate("noah_muller_9847", 50, "delayed_flight"), **OK)


def test_a_delay_after_the_reservation_was_changed_for_it(airline: Airline) -> None:
    """The careful path the sentence describes: liam_ito_4473 (silver) complains that HAT002
    (LWTEDF, 1 passenger) is delayed today and wants to change; the agent moves it to HAT002
    tomorrow, then offers the certificate — no reservation shows the delay any more, the
    changed one is priced at today's price."""
    liam = "customer:liam_ito_4473"
    airline.run({"tool": "update_reservation_flights", "on_behalf_of": liam, "facts": YES,
                 "arguments": {"reservation_id": "LWTEDF", "cabin": "economy",
                               "payment_id": "credit_card_5260935",
                               "flights": [{"flight_number": "HAT002",
                                            "date": "2024-05-16"}]}}, **OK)
    airline.run(_certificate("liam_ito_4473", 50, "delayed_flight"), **OK)


def test_an_upgraded_reservation_changed_in_its_old_cabin(airline: Airline) -> None:
    """ "Cabin class must be the same across all the flights in the same reservation;
    changing cabin for just one flight segment is not possible." OWZ4XL (ivan_rossi_8555,
    basic economy, EWR→MIA→LAX) is upgraded to economy; the API leaves its `cabin` field at
    basic_economy. An agent copying that field to replace the second leg: the API keeps
    HAT202 at its economy price (196) and prices HAT200 in basic economy (50) — refunding
    $60. Before, it went through; the careful call names the cabin flown."""
    who = "customer:ivan_rossi_8555"

    def change(cabin: str, second: str) -> dict[str, Any]:
        return {"tool": "update_reservation_flights", "on_behalf_of": who, "facts": YES,
                "arguments": {"reservation_id": "OWZ4XL", "cabin": cabin,
                              "payment_id": "credit_card_9659780",
                              "flights": [{"flight_number": "HAT202", "date": "2024-05-21"},
                                          {"flight_number": second, "date": "2024-05-21"}]}}
    airline.run(change("economy", "HAT232"), **OK)
    airline.run(change("basic_economy", "HAT200"), **_no("airline_cabin_mixed"))
    airline.run(change("economy", "HAT200"), **OK)
