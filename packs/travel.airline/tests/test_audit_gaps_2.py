"""A third pass over ``wiki.md``, sentence by sentence and tool by tool: the gaps it found
(each case failed before its fix) with the careful calls beside them that must go through.
Every case is built from the benchmark's data (users, reservations, flights of
``shared/data/tau-airline``) and runs through the governed loop on a fresh copy of its
database."""

from __future__ import annotations

from typing import Any

Airline = Any  # the `airline` fixture (conftest.py): a home, its runner, its database

YES = [["airline:confirmed", "yes"]]
OK = {"status": "executed"}


def _no(*codes: str) -> dict[str, Any]:
    return {"status": "denied", "codes": list(codes)}


def _pax(n: int, last: str) -> list[dict[str, str]]:
    return [{"first_name": f"P{i}", "last_name": last, "dob": "1990-04-05"} for i in range(n)]


def _book(uid: str, pays: list[tuple[str, float]], pax: int = 1) -> dict[str, Any]:
    """HAT069 JFK→SEA on 2024-05-20: 121 a passenger in economy (12 seats left)."""
    return {"tool": "book_reservation", "on_behalf_of": f"customer:{uid}", "facts": YES,
            "arguments": {"user_id": uid, "origin": "JFK", "destination": "SEA",
                          "flight_type": "one_way", "cabin": "economy",
                          "flights": [{"flight_number": "HAT069", "date": "2024-05-20"}],
                          "passengers": _pax(pax, "Lee"),
                          "payment_methods": [{"payment_id": p, "amount": a} for p, a in pays],
                          "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}}


def _certificate(uid: str, amount: int, ground: str) -> dict[str, Any]:
    return {"tool": "send_certificate", "on_behalf_of": f"customer:{uid}",
            "arguments": {"user_id": uid, "amount": amount},
            "facts": [["airline:confirmed", "yes"], ["airline:compensationRequested", ground]]}


# --- send_certificate ----------------------------------------------------------------------

def test_a_reservation_booked_now_is_not_one_changed_for_a_delay(airline: Airline) -> None:
    """ "If the user is silver/gold member … and complains about delayed flights in a
    reservation and wants to change or cancel the reservation, the agent can offer a
    certificate as a gesture after confirming the facts and changing or cancelling the
    reservation, with the amount being $50 times the number of passengers."

    Task 46's customer, noah_muller_9847 (gold), first books a flight for 3 passengers, then
    complains about the delayed flight of his last reservation and insists it had 3
    passengers. Nothing of his shows a delayed flight; 4OG6T3 (1 passenger) has HAT006 that
    took off late on 2024-05-11: $50. Before, the booking just made (priced at today's price
    like a reservation changed for a delay) counted as a reservation concerned, so the $150
    the customer's wrong count asks for went through; a reservation booked now has no delayed
    flight to complain about."""
    noah = "noah_muller_9847"
    airline.run(_book(noah, [("credit_card_1245537", 363)], pax=3), **OK)
    airline.run(_certificate(noah, 150, "delayed_flight"), **_no("airline_compensation_amount"))
    airline.run(_certificate(noah, 50, "delayed_flight"), **OK)


def test_a_reservation_changed_for_the_delay_still_counts(airline: Airline) -> None:
    """The careful twin: liam_ito_4473 (silver) has LWTEDF (1 passenger) on HAT002, delayed
    today; the agent moves it to HAT002 tomorrow and the customer also books a new trip for
    2. The $50 for the changed reservation goes through; $100 (the new booking's 2
    passengers) does not — his other reservation that flew late, 8M6I1F, has 3."""
    liam = "liam_ito_4473"
    airline.run({"tool": "update_reservation_flights", "on_behalf_of": f"customer:{liam}",
                 "facts": YES,
                 "arguments": {"reservation_id": "LWTEDF", "cabin": "economy",
                               "payment_id": "credit_card_5260935",
                               "flights": [{"flight_number": "HAT002",
                                            "date": "2024-05-16"}]}}, **OK)
    airline.run(_book(liam, [("credit_card_5260935", 242)], pax=2), **OK)
    airline.run(_certificate(liam, 100, "delayed_flight"), **_no("airline_compensation_amount"))
    airline.run(_certificate(liam, 50, "delayed_flight"), **OK)


# --- book_reservation: payment lines ---------------------------------------------------------

def test_a_card_listed_for_nothing_is_not_refused(airline: Airline) -> None:
    """ "Payment: each reservation can use at most one travel certificate, at most one credit
    card, and at most three gift cards." Nothing in the policy forbids a credit card or gift
    card line of $0, and the API charges nothing to it (a gift card is debited by 0): mia_li_3668
    pays HAT069 (121) with certificate_7504069 ($250) and lists credit_card_4421486 for the rest,
    0. Before, every 0 line was refused (`airline_payment_amount`), a policy-respecting booking
    blocked; a certificate listed for 0 is still refused — the API consumes it for nothing."""
    airline.run(_book("mia_li_3668", [("certificate_7504069", 121),
                                      ("credit_card_4421486", 0)]), **OK)


def test_a_gift_card_listed_for_nothing_is_not_refused(airline: Airline) -> None:
    """aarav_lee_3563 pays HAT069 with credit_card_7195750 and lists gift_card_6737013 ($262)
    for 0: the card keeps its $262."""
    airline.run(_book("aarav_lee_3563", [("credit_card_7195750", 121),
                                         ("gift_card_6737013", 0)]), **OK)
    assert airline.db.user("aarav_lee_3563")["payment_methods"]["gift_card_6737013"][
        "amount"] == 262


def test_a_certificate_listed_for_nothing_is_still_refused(airline: Airline) -> None:
    airline.run(_book("mia_li_3668", [("certificate_7504069", 0),
                                      ("credit_card_4421486", 121)]),
                **_no("airline_payment_amount"))


def test_a_reservation_never_changed_does_not_confirm_a_delay(airline: Airline) -> None:
    """The same sentence: "after confirming the facts". ivan_rossi_8555 (silver, task 22's
    customer) has no flight delayed, none that took off late; his OWZ4XL (3 passengers) was
    booked at the price its flights still have today, as 31 other reservations of the
    benchmark's data were. Before, that price made OWZ4XL a reservation "changed for the
    delay", so a $150 delay certificate went through with nothing delayed. A reservation the
    API changed also shows the difference it charged or refunded after the booking's payment;
    OWZ4XL shows only its booking: nothing confirms a delay. (The careful path — LWTEDF moved
    off its delayed flight, then $50 — is `test_a_reservation_changed_for_the_delay_still_counts`
    here and `test_a_delay_after_the_reservation_was_changed_for_it` in test_audit_gaps.py.)"""
    airline.run(_certificate("ivan_rossi_8555", 150, "delayed_flight"),
                **_no("airline_compensation_contradicted"))


# --- book_reservation: one payment method on two lines ---------------------------------------

def test_a_certificate_listed_twice_is_the_apis_own_error(airline: Airline) -> None:
    """ "All payment methods must already be in user profile": the benchmark's API removes a
    certificate from the profile at its first line and fails at the second (KeyError); the
    benchmark's environment answers any such failure as ``Error: <exception>``. mia_li_3668
    lists certificate_7504069 ($250) for 60 and 61 of HAT069's 121. Before, the pack's own
    check crashed on it (`domain_preconditions_error`, denied): the API's answer did not come
    back. Now the call reaches the API and its error comes back unchanged, nothing changed."""
    out = airline.run(_book("mia_li_3668", [("certificate_7504069", 60),
                                            ("certificate_7504069", 61)]),
                      status="verification_failed", codes=[])
    assert out["output"] == "Error: 'certificate_7504069'"
    assert "certificate_7504069" in airline.db.user("mia_li_3668")["payment_methods"]


def test_one_credit_card_on_two_lines_is_one_credit_card(airline: Airline) -> None:
    """ "each reservation can use at most one travel certificate, at most one credit card, and
    at most three gift cards": credit_card_4421486 of mia_li_3668 on two lines (60 + 61) is one
    credit card; the API charges it 121 in all. Before, each line counted as a card
    (`airline_payment_mix`, a policy-respecting booking denied) — a rule made when a gift card
    listed twice could be overdrawn, which R5d now sums against its balance. Two different
    credit cards are still refused (test_policy_review.py, "book: two credit cards")."""
    airline.run(_book("mia_li_3668", [("credit_card_4421486", 60),
                                      ("credit_card_4421486", 61)]), **OK)


def test_three_gift_cards_one_of_them_on_two_lines(airline: Airline) -> None:
    """ "… at most three gift cards": sophia_davis_8874 pays HAT069 (121) with her three gift
    cards, gift_card_2075462 ($199) on two lines (30 + 31) beside gift_card_6874494 (30) and
    gift_card_5896248 (30). Three gift cards; before, four lines counted as four cards
    (`airline_payment_mix`). Four distinct gift cards are still refused: mohamed_gonzalez_6188
    pays with his four."""
    airline.run(_book("sophia_davis_8874", [("gift_card_2075462", 30), ("gift_card_2075462", 31),
                                            ("gift_card_6874494", 30),
                                            ("gift_card_5896248", 30)]), **OK)
    airline.run(_book("mohamed_gonzalez_6188", [("gift_card_9659287", 30),
                                                ("gift_card_3390787", 30),
                                                ("gift_card_6959577", 30),
                                                ("gift_card_7158052", 31)]),
                **_no("airline_payment_mix"))


def test_a_cancellation_is_not_a_change_of_flights(airline: Airline) -> None:
    """The same sentence, the reservation cancelled instead: anya_sanchez_5251 (silver) has no
    flight delayed and none late; DGLJTR (economy, insured, 2 passengers) is booked at the
    price its flights still have today. She cancels it for her health (insured: allowed). The
    API's refund lines then made DGLJTR look changed (more than its booking's payment), and a
    $100 delay certificate went through with nothing delayed. The refunds of a cancellation
    are not the difference of a change of flights: nothing confirms a delay."""
    anya = "anya_sanchez_5251"
    airline.run({"tool": "cancel_reservation", "on_behalf_of": f"customer:{anya}",
                 "facts": [["airline:confirmed", "yes"], ["airline:cancellationReason", "health"]],
                 "arguments": {"reservation_id": "DGLJTR"}}, **OK)
    airline.run(_certificate(anya, 100, "delayed_flight"),
                **_no("airline_compensation_contradicted"))
