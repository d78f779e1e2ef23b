"""Rules beyond the examples: whose word counts (the customer's, or the host relaying it),
a yes that is a no, a cancelled reservation, the cabin a reprice shows, the domain clock,
and the API's own errors first."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

Airline = Any  # the `airline` fixture (conftest.py): a home, its runner, its database

OLIVIA = "customer:olivia_gonzalez_2305"
SOFIA = "customer:sofia_anderson_8718"
EST = timezone(timedelta(hours=-5))
KEEP = [{"flight_number": "HAT006", "date": "2024-05-28"},
        {"flight_number": "HAT055", "date": "2024-05-28"},
        {"flight_number": "HAT038", "date": "2024-05-30"},
        {"flight_number": "HAT194", "date": "2024-05-30"}]


def _cancel(rid: str, who: str, reason: str) -> dict[str, object]:
    return {"tool": "cancel_reservation", "arguments": {"reservation_id": rid},
            "on_behalf_of": who, "facts": [["airline:confirmed", "yes"],
                                           ["airline:cancellationReason", reason]]}


def test_a_reason_stated_by_the_agent_is_not_the_customers(airline: Airline) -> None:
    call = {"tool": "cancel_reservation", "arguments": {"reservation_id": "Z7GOZK"},
            "on_behalf_of": OLIVIA,
            "facts": [{"subject": OLIVIA, "predicate": "airline:cancellationReason",
                       "object": "health", "source": "agent:airline-assistant"}]}
    out = airline.run(call, status="needs_clarification",
                      missing_facts=["airline:cancellationReason"])
    assert "only the customer's own statement counts" in out["reasons"][0]


def _stated(source: str, subject: str = OLIVIA) -> dict[str, object]:
    return {"tool": "cancel_reservation", "arguments": {"reservation_id": "Z7GOZK"},
            "on_behalf_of": OLIVIA,
            "facts": [{"subject": subject, "predicate": "airline:cancellationReason",
                       "object": "health", "source": source},
                      {"subject": subject, "predicate": "airline:confirmed",
                       "object": "yes", "source": source}]}


def test_a_statement_the_host_relays_is_the_customers(airline: Airline) -> None:
    """The chat front-end (the MCP or LangGraph host, ``cradle-kg/facts``: recorded as
    ``host:<session>``) relays what the customer said: their word. (Before, it was
    hearsay: through MCP every write that needs a statement was `needs_clarification`.)"""
    airline.run(_stated("host:mcp-20240515T150000-1a2b3c4d"), status="executed")


def test_a_statement_the_host_relays_about_someone_else_is_not(airline: Airline) -> None:
    out = airline.run(_stated("host:mcp-1", subject=SOFIA), status="needs_clarification",
                      missing_facts=["airline:cancellationReason"])
    assert "only the customer's own statement counts" in out["reasons"][0]


def test_a_customer_who_said_no(airline: Airline) -> None:
    call = _cancel("Z7GOZK", OLIVIA, "health")
    call["facts"] = [*call["facts"], ["airline:confirmed", "no"]]  # type: ignore[list-item]
    airline.run(call, status="denied", codes=["airline_not_confirmed"])


def test_a_cancelled_reservation_is_not_cancelled_again(airline: Airline) -> None:
    airline.run(_cancel("Z7GOZK", OLIVIA, "health"), status="executed")
    out = airline.run(_cancel("Z7GOZK", OLIVIA, "health"), status="denied",
                      codes=["airline_already_cancelled"])
    assert "is cancelled" in out["reasons"][0]


def test_the_cabin_is_read_from_the_reprice(airline: Airline) -> None:
    """Basic economy upgraded to business (the API leaves `cabin` as it was, the prices
    show business): it is business now, and business can always be cancelled."""
    airline.run({"tool": "update_reservation_flights", "on_behalf_of": SOFIA,
                 "arguments": {"reservation_id": "1OWO6T", "cabin": "business",
                               "flights": KEEP, "payment_id": "credit_card_7385026"},
                 "facts": [["airline:confirmed", "yes"]]}, status="executed")
    res = airline.db.reservation("1OWO6T")
    assert res is not None and res["cabin"] == "basic_economy"  # the API's behaviour
    airline.run(_cancel("1OWO6T", SOFIA, "change_of_plan"), status="executed")


def test_the_domain_clock_decides_the_24_hours(airline: Airline) -> None:
    data = airline.home.entry("db:default_data")()
    airline.db.load(data, datetime(2024, 5, 16, 9, 0, tzinfo=EST))  # 33 h after booking
    airline.run(_cancel("JEPRZB", "customer:anya_brown_2655", "change_of_plan"),
                status="denied", codes=["airline_not_cancellable"])
    airline.db.load(data, datetime(2024, 5, 15, 15, 0, tzinfo=EST))  # the policy's clock
    airline.run(_cancel("JEPRZB", "customer:anya_brown_2655", "change_of_plan"),
                status="executed")


def test_the_api_refuses_first_and_its_error_comes_back_unchanged(airline: Airline) -> None:
    """Booked for another customer *and* paid with a card nobody has: the API's error,
    not a policy decision."""
    call = {"tool": "book_reservation", "on_behalf_of": OLIVIA,
            "facts": [["airline:confirmed", "yes"]],
            "arguments": {"user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA",
                          "flight_type": "one_way", "cabin": "economy",
                          "flights": [{"flight_number": "HAT136", "date": "2024-05-20"},
                                      {"flight_number": "HAT039", "date": "2024-05-20"}],
                          "passengers": [{"first_name": "Mia", "last_name": "Li",
                                          "dob": "1990-04-05"}],
                          "payment_methods": [{"payment_id": "credit_card_0", "amount": 255}],
                          "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}}
    out = airline.run(call, status="verification_failed",
                      output="Error: payment method credit_card_0 not found")
    assert out["codes"] == []


def test_a_certificate_for_another_customer(airline: Airline) -> None:
    airline.run({"tool": "send_certificate", "on_behalf_of": OLIVIA,
                 "arguments": {"user_id": "ethan_martin_2396", "amount": 150},
                 "facts": [["airline:confirmed", "yes"],
                           ["airline:compensationRequested", "delayed_flight"]]},
                status="denied", codes=["airline_not_owner"])


def _delayed(who: str, amount: int) -> dict[str, object]:
    return {"tool": "send_certificate", "on_behalf_of": f"customer:{who}",
            "arguments": {"user_id": who, "amount": amount},
            "facts": [["airline:confirmed", "yes"],
                      ["airline:compensationRequested", "delayed_flight"]]}


def test_a_delay_is_compensated_for_the_reservation_that_was_delayed(airline: Airline) -> None:
    """ "complains about delayed flights in a reservation … $50 times the number of
    passengers": the passengers of the reservation with the delayed flight (M61CQM, 3),
    not those of another of the customer's reservations (GXWCPN, 1; HG8X9P, 2)."""
    airline.run(_delayed("ethan_martin_2396", 50), status="denied",
                codes=["airline_compensation_amount"])
    airline.run(_delayed("ethan_martin_2396", 100), status="denied",
                codes=["airline_compensation_amount"])
    airline.run(_delayed("ethan_martin_2396", 150), status="executed")


def test_a_regular_member_delayed_in_basic_economy_is_not_compensated(
        airline: Airline) -> None:
    """ "Do not compensate if the user is regular member and has no travel insurance and
    flies (basic) economy": mia_santos_2092's delayed flight is in 4NXSCL (basic economy,
    no insurance); her other, insured reservations were not delayed."""
    airline.run(_delayed("mia_santos_2092", 50), status="denied",
                codes=["airline_compensation_ineligible"])


def test_a_delay_in_business_is_compensated_for_that_reservation(airline: Airline) -> None:
    """mei_brown_7075 (regular) was delayed in 3JA7XV, business, 4 passengers: $200; the
    $50 of MUGYUB (business, 1 passenger, not delayed) is not the complaint's amount."""
    airline.run(_delayed("mei_brown_7075", 50), status="denied",
                codes=["airline_compensation_amount"])
    airline.run(_delayed("mei_brown_7075", 200), status="executed")


def test_no_delayed_flight_left_any_eligible_reservation_counts(airline: Airline) -> None:
    """No reservation of noah_muller_9847 (gold) shows a delayed flight (a change may have
    replaced it): the passengers of any of his reservations (4OG6T3: 1, SDZQKO: 2)."""
    airline.run(_delayed("noah_muller_9847", 150), status="denied",
                codes=["airline_compensation_amount"])
    airline.run(_delayed("noah_muller_9847", 50), status="executed")


def test_one_complaint_one_certificate(airline: Airline) -> None:
    """ "the agent can offer a certificate as a gesture … with the amount being $50 times
    the number of passengers": a second certificate for the same delayed reservation doubles
    the gesture. The certificates the API issued (`certificate_3221322`, …) are in the
    profile the rule reads."""
    airline.run(_delayed("ethan_martin_2396", 150), status="executed")
    airline.run(_delayed("ethan_martin_2396", 150), status="denied",
                codes=["airline_compensation_repeated"])


def test_a_certificate_per_reservation_concerned(airline: Airline) -> None:
    """mei_lopez_9471 has two business reservations with a cancelled flight, one passenger
    each: one $100 certificate for each, not a third; noah_muller_9847 (no delay shown, two
    reservations: 1 and 2 passengers) gets $50 once."""
    cancelled = {"tool": "send_certificate", "on_behalf_of": "customer:mei_lopez_9471",
                 "arguments": {"user_id": "mei_lopez_9471", "amount": 100},
                 "facts": [["airline:confirmed", "yes"],
                           ["airline:compensationRequested", "cancelled_flight"]]}
    airline.run(cancelled, status="executed")
    airline.run(cancelled, status="executed")
    airline.run(cancelled, status="denied", codes=["airline_compensation_repeated"])
    airline.run(_delayed("noah_muller_9847", 50), status="executed")
    airline.run(_delayed("noah_muller_9847", 50), status="denied",
                codes=["airline_compensation_repeated"])


def test_a_certificate_of_another_ground_is_not_a_repeat(airline: Airline) -> None:
    """GCZ58I (lucas_sanchez_1853, gold, 2 passengers) has a cancelled and a delayed flight:
    $200 for the one and $100 for the other are two gestures, not one repeated."""
    airline.run({"tool": "send_certificate", "on_behalf_of": "customer:lucas_sanchez_1853",
                 "arguments": {"user_id": "lucas_sanchez_1853", "amount": 200},
                 "facts": [["airline:confirmed", "yes"],
                           ["airline:compensationRequested", "cancelled_flight"]]},
                status="executed")
    airline.run(_delayed("lucas_sanchez_1853", 100), status="executed")
