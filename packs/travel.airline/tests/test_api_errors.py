"""Calls the benchmark's API itself rejects come back as the API's error, unchanged — also
when their arguments are malformed.

The benchmark's ``Env.step`` hands the agent's JSON arguments to ``<Tool>.invoke`` as they
came and answers what it raises as ``Error: <exception>``. Before, the pack's typed contract
stood in between: a payment ``amount`` of ``"121"`` was coerced to 121 and the booking
executed (the benchmark's API fails on it), and a missing argument, an unknown one or a
cabin ``Economy`` was the runtime's own ``invalid_arguments`` denial, in other words than
the API's. Each expected text below is what the benchmark's own function answers on the
same call and the same data (``tau_bench/envs/airline/tools``, run through ``Env.step``'s
``try``). Every case is built from the benchmark's data (``shared/data/tau-airline``): the
outcome is the one of any API error — the call reaches the API, nothing changes,
``verification_failed`` with the error as the output. A call the API would accept with an
argument outside its schema is refused before any rule, and the careful call still goes
through."""

from __future__ import annotations

import json
from typing import Any

Airline = Any  # the `airline` fixture (conftest.py): a home, its runner, its database

YES = [["airline:confirmed", "yes"]]
OK = {"status": "executed"}


def _api(airline: Airline, call: dict[str, Any], error: str) -> None:
    out = airline.run(call, status="verification_failed", codes=[])
    assert out["output"] == error


def _pax(n: int, last: str) -> list[dict[str, str]]:
    return [{"first_name": f"P{i}", "last_name": last, "dob": "1990-04-05"} for i in range(n)]


_GONE = object()  # an argument left out of the call


def _book(**change: Any) -> dict[str, Any]:
    """mia_li_3668 (gold) books HAT069 JFK→SEA on 2024-05-20: 121 in economy."""
    args: dict[str, Any] = {
        "user_id": "mia_li_3668", "origin": "JFK", "destination": "SEA",
        "flight_type": "one_way", "cabin": "economy",
        "flights": [{"flight_number": "HAT069", "date": "2024-05-20"}],
        "passengers": _pax(1, "Li"),
        "payment_methods": [{"payment_id": "credit_card_4421486", "amount": 121}],
        "total_baggages": 0, "nonfree_baggages": 0, "insurance": "no"}
    args.update(change)
    for key in [k for k, v in change.items() if v is _GONE]:
        del args[key]
    return {"tool": "book_reservation", "on_behalf_of": "customer:mia_li_3668", "facts": YES,
            "arguments": args}



def _on(tool: str, who: str, facts: list[list[str]], **args: Any) -> dict[str, Any]:
    return {"tool": tool, "on_behalf_of": f"customer:{who}", "facts": facts,
            "arguments": args}


def _reservations(airline: Airline, uid: str) -> list[str]:
    return list(airline.db.user(uid)["reservations"])


# --- book_reservation -------------------------------------------------------------------

def test_a_string_amount_is_the_apis_error_not_a_booking(airline: Airline) -> None:
    """The audit's case: `"amount": "121"` for HAT069's 121. The benchmark sums the amounts
    (`0 + "121"`) and fails; the pack coerced the string to 121 and booked (executed)."""
    before = _reservations(airline, "mia_li_3668")
    _api(airline, _book(payment_methods=[{"payment_id": "credit_card_4421486",
                                          "amount": "121"}]),
         "Error: unsupported operand type(s) for +: 'int' and 'str'")
    assert _reservations(airline, "mia_li_3668") == before


def test_a_string_amount_on_a_certificate_fails_at_its_balance(airline: Airline) -> None:
    """On a certificate the benchmark compares the balance first (`250 < "121"`)."""
    _api(airline, _book(payment_methods=[{"payment_id": "certificate_7504069",
                                          "amount": "121"}]),
         "Error: '<' not supported between instances of 'int' and 'str'")
    assert "certificate_7504069" in airline.db.user("mia_li_3668")["payment_methods"]


def test_a_missing_argument_is_the_apis_error(airline: Airline) -> None:
    """`insurance` left out: `Env.step`'s call of `BookReservation.invoke` fails to bind."""
    _api(airline, _book(insurance=_GONE),
         "Error: BookReservation.invoke() missing 1 required positional argument: "
         "'insurance'")


def test_a_capitalised_cabin_is_the_apis_error(airline: Airline) -> None:
    """`"cabin": "Economy"`: the benchmark reads `available_seats["Economy"]` (KeyError)."""
    _api(airline, _book(cabin="Economy"), "Error: 'Economy'")


def test_a_string_bag_count_the_api_computes_with_is_its_error(airline: Airline) -> None:
    """`"nonfree_baggages": "0"`: the benchmark adds `50 * "0"` to the price. (Before, the
    Cedar comparison of the bag counts failed to evaluate on the string: `policy_error`.)"""
    _api(airline, _book(nonfree_baggages="0"),
         "Error: unsupported operand type(s) for +=: 'int' and 'str'")


def test_an_unknown_argument_is_the_apis_error(airline: Airline) -> None:
    _api(airline, _book(payment_id="credit_card_4421486"),
         "Error: BookReservation.invoke() got an unexpected keyword argument 'payment_id'")


def test_a_user_id_that_is_not_a_string_is_the_apis_error(airline: Airline) -> None:
    """A number is no user of the benchmark's data (`Error: user not found`); the target
    derived from such an id accepts the customer's target, the API answering."""
    _api(airline, _book(user_id=3668), "Error: user not found")


def test_what_the_api_accepts_outside_its_schema_is_refused(airline: Airline) -> None:
    """`"total_baggages": "0"`: the benchmark never computes with the total, so it would book
    and store the string; the rules are written for whole numbers — refused before any
    rule (fail closed), nothing booked, with the argument named. (Before, a `policy_error`:
    the Cedar comparison of the bag counts failed to evaluate on the string.)"""
    before = _reservations(airline, "mia_li_3668")
    out = airline.run(_book(total_baggages="0"), status="denied",
                      codes=["airline_argument_invalid"])
    assert "`total_baggages`" in out["reasons"][0]
    assert _reservations(airline, "mia_li_3668") == before


def test_extra_keys_in_a_flight_still_book(airline: Airline) -> None:
    """The benchmark's schema names a flight's keys without forbidding others and its API
    keeps what it is given: a flight copied with its `price` is booked (the API prices it)."""
    out = airline.run(_book(flights=[{"flight_number": "HAT069", "date": "2024-05-20",
                                      "price": 1}]), **OK)
    assert json.loads(out["output"])["flights"][0]["price"] == 121


# --- the other writes ---------------------------------------------------------------------

def test_cancel_without_its_reservation_id_is_the_apis_error(airline: Airline) -> None:
    """(Before, the example runner could not even name the call's target: KeyError.)"""
    _api(airline, _on("cancel_reservation", "anya_garcia_5901",
                      [["airline:confirmed", "yes"], ["airline:cancellationReason", "health"]]),
         "Error: CancelReservation.invoke() missing 1 required positional argument: "
         "'reservation_id'")


def test_cancel_with_the_reason_as_an_argument_is_the_apis_error(airline: Airline) -> None:
    """An agent that passes the customer's reason to the tool: the benchmark's
    `cancel_reservation` takes only the id. 3RK2T9 is left as it was."""
    _api(airline, _on("cancel_reservation", "anya_garcia_5901",
                      [["airline:confirmed", "yes"],
                       ["airline:cancellationReason", "health"]], reservation_id="3RK2T9",
                      reason="health"),
         "Error: CancelReservation.invoke() got an unexpected keyword argument 'reason'")
    assert airline.db.reservation("3RK2T9").get("status") != "cancelled"


def test_a_capitalised_cabin_in_a_change_is_the_apis_error(airline: Airline) -> None:
    """OWZ4XL (ivan_rossi_8555, basic economy) upgraded on its own flights with
    `"cabin": "Economy"`."""
    flights = [{"flight_number": "HAT202", "date": "2024-05-21"},
               {"flight_number": "HAT232", "date": "2024-05-21"}]
    _api(airline, _on("update_reservation_flights", "ivan_rossi_8555", YES,
                      reservation_id="OWZ4XL", cabin="Economy", flights=flights,
                      payment_id="credit_card_9659780"), "Error: 'Economy'")
    assert airline.db.reservation("OWZ4XL")["cabin"] == "basic_economy"


def test_a_string_bag_count_in_a_change_is_the_apis_error(airline: Airline) -> None:
    """1N99U6 (james_taylor_7043): `"nonfree_baggages": "1"` — the benchmark subtracts the
    reservation's count from it. (Before, a `policy_error` of the Cedar bag comparison.)"""
    _api(airline, _on("update_reservation_baggages", "james_taylor_7043", YES,
                      reservation_id="1N99U6", total_baggages=5, nonfree_baggages="1",
                      payment_id="gift_card_5634230"),
         "Error: unsupported operand type(s) for -: 'str' and 'int'")
    assert airline.db.reservation("1N99U6")["total_baggages"] == 1


def test_passengers_left_out_is_the_apis_error(airline: Airline) -> None:
    _api(airline, _on("update_reservation_passengers", "anya_garcia_5901", YES,
                      reservation_id="3RK2T9"),
         "Error: UpdateReservationPassengers.invoke() missing 1 required positional "
         "argument: 'passengers'")


def test_a_certificate_without_an_amount_is_the_apis_error(airline: Airline) -> None:
    _api(airline, _on("send_certificate", "ethan_martin_2396",
                      [["airline:confirmed", "yes"],
                       ["airline:compensationRequested", "delayed_flight"]],
                      user_id="ethan_martin_2396"),
         "Error: SendCertificate.invoke() missing 1 required positional argument: 'amount'")


def test_a_string_certificate_amount_is_refused_not_coerced(airline: Airline) -> None:
    """`"amount": "150"`: the benchmark's `send_certificate` stores the string as the
    certificate's amount (a certificate its own booking cannot then compare); the pack
    coerced it to 150 and sent it. Refused before any rule; the careful call (150, the
    delayed reservation's 3 passengers) goes through."""
    call = _on("send_certificate", "ethan_martin_2396",
               [["airline:confirmed", "yes"], ["airline:compensationRequested", "delayed_flight"]],
               user_id="ethan_martin_2396", amount="150")
    airline.run(call, status="denied", codes=["airline_argument_invalid"])
    assert "certificate_3221322" not in airline.db.user("ethan_martin_2396")["payment_methods"]
    airline.run({**call, "arguments": {"user_id": "ethan_martin_2396", "amount": 150}}, **OK)


def test_a_booking_for_no_one_is_refused(airline: Airline) -> None:
    """`"passengers": []` with nothing to pay: the benchmark's API books a reservation of
    HAT069 for no one at 0 (the contract's old minimum of one passenger is gone with it)."""
    airline.run(_book(passengers=[], payment_methods=[]), status="denied",
                codes=["airline_no_passenger"])


def test_a_bag_count_past_any_reservation_is_refused(airline: Airline) -> None:
    """1N99U6 (james_taylor_7043): a million bags, none non-free — the API charges nothing
    and stores the count; past the bound the old contract held (1000), refused before any
    rule."""
    airline.run(_on("update_reservation_baggages", "james_taylor_7043", YES,
                    reservation_id="1N99U6", total_baggages=10**6, nonfree_baggages=0,
                    payment_id="gift_card_5634230"), status="denied",
                codes=["airline_argument_invalid"])


# --- every argument of every write, malformed: the rules never crash, never allow by accident

ODD: list[Any] = [None, True, 2, 2.5, -1, "2", "Economy", "", [], {}, ["x"], [None], [{}],
                  {"a": 1}]
CAREFUL: dict[str, tuple[str, dict[str, Any], list[list[str]]]] = {
    "book_reservation": ("mia_li_3668", _book()["arguments"], YES),
    "cancel_reservation": ("amelia_davis_8890", {"reservation_id": "LU15PA"},
                           [["airline:confirmed", "yes"],
                            ["airline:cancellationReason", "change_of_plan"]]),
    "update_reservation_flights": ("ivan_rossi_8555", {
        "reservation_id": "OWZ4XL", "cabin": "economy",
        "flights": [{"flight_number": "HAT202", "date": "2024-05-21"},
                    {"flight_number": "HAT232", "date": "2024-05-21"}],
        "payment_id": "credit_card_9659780"}, YES),
    "update_reservation_baggages": ("james_taylor_7043", {
        "reservation_id": "1N99U6", "total_baggages": 4, "nonfree_baggages": 0,
        "payment_id": "gift_card_5634230"}, YES),
    "update_reservation_passengers": ("anya_garcia_5901", {
        "reservation_id": "3RK2T9", "passengers": _pax(2, "Garcia")}, YES),
    "send_certificate": ("ethan_martin_2396", {"user_id": "ethan_martin_2396",
                                               "amount": 150},
                         [["airline:confirmed", "yes"],
                          ["airline:compensationRequested", "delayed_flight"]]),
}


def _malformed(args: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = [("an unknown key", {**args, "note": "x"})]
    for key, value in args.items():
        out.append((f"no {key}", {k: v for k, v in args.items() if k != key}))
        out += [(f"{key}={odd!r}", {**args, key: odd}) for odd in ODD]
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for inner in value[0]:
                out.append((f"{key}[0] without {inner}", {**args, key: [
                    {k: v for k, v in value[0].items() if k != inner}, *value[1:]]}))
                out += [(f"{key}[0].{inner}={odd!r}", {**args, key: [
                    {**value[0], inner: odd}, *value[1:]]}) for odd in ODD]
    return out


def test_malformed_arguments_are_the_apis_error_or_refused(airline: Airline) -> None:
    """Each argument of each write left out, or replaced by a value of another JSON type,
    or an unknown key added — 550 calls on the benchmark's data, decided by the
    validator as gate 1 asks it: whenever the API would answer `Error: …` no rule applies
    (the call goes to the API); a call the API would accept outside the benchmark's schema
    is refused (`airline_argument_invalid`) and nothing else; no call crashes a rule, and
    the only ones allowed change what no rule reads (a passenger's name, a date of birth,
    still strings)."""
    from datetime import datetime

    api = airline.home.entry("api:View")
    writes = airline.home.entry("api:WRITES")
    rules = airline.home.entry("rules:findings")
    call_of = airline.home.entry("rules:Call")
    created = airline.home.entry("tools:created_at_of")
    now = airline.home.entry("db:DEFAULT_NOW")
    assert isinstance(now, datetime)
    malformed = airline.home.entry("rules:malformed")
    checked, allowed = 0, []
    with airline.db.reading() as conn:
        for tool, (who, careful, facts) in CAREFUL.items():
            said = {p: v for p, v in facts}
            for label, args in [("careful", careful), *_malformed(careful)]:
                dry = writes[tool](api(conn, created(now)), **json.loads(json.dumps(args)))
                found = rules(api(conn, created(now)), call_of(
                    tool=tool, args=args, on_behalf_of=f"customer:{who}", said=said,
                    hearsay={}, now=now))
                checked += 1
                if label == "careful":
                    assert found == [], (tool, found)
                elif dry.startswith("Error:"):
                    assert found == [], (tool, label, dry, found)
                elif malformed(tool, args) is not None:
                    assert [f.code for f in found] == ["airline_argument_invalid"], (
                        tool, label, found)
                elif not found:  # the schema's types, decided by the rules like any call
                    allowed.append(f"{tool} {label}")
    assert checked > 500
    # of what the API accepts within the schema, the rules let through only values no rule
    # reads (passengers' names and dates of birth: "2", "Economy", "") and 2 bags within
    # the allowance (a careful call)
    assert [a for a in allowed if not any(
        f"].{key}=" in a for key in ("first_name", "last_name", "dob"))] == [
        "book_reservation total_baggages=2", "update_reservation_baggages total_baggages=2"]


def test_a_read_with_a_missing_argument_answers_the_apis_error(airline: Airline) -> None:
    """Reads too: `get_reservation_details` without its id answers the benchmark's error
    (a read changes nothing and has no verifier: executed, the error as its output)."""
    out = airline.run({"tool": "get_reservation_details", "arguments": {}}, **OK)
    assert out["output"] == ("Error: GetReservationDetails.invoke() missing 1 required "
                             "positional argument: 'reservation_id'")
    out = airline.run({"tool": "calculate", "arguments": {"expression": 121}}, **OK)
    assert out["output"] == "Error: 'int' object is not iterable"


def test_calculate_answers_what_the_benchmarks_eval_answers(airline: Airline) -> None:
    """The benchmark evaluates the expression with `eval`, which strips leading spaces and
    evaluates `()`, `...` and a number called; each answer below is the benchmark's own.
    (Before, the port parsed the text as it came: `" 121*2"` was `Error: unexpected indent
    (<string>, line 1)`, the others `Error: invalid syntax`, and any power with an exponent
    past 64 `Error: exponent too large` — `1**67` included.) A power whose exact integer
    would pass 4096 bits is not computed (`9**9**9` would take hours): it fails as the
    benchmark's `float()` fails on such an integer."""
    for expression, answer in [
            (" 121*2", "242.0"), ("  (121 + 50) * 2 ", "342.0"),
            (" ", "Error: invalid syntax (<string>, line 0)"),
            ("()", "Error: float() argument must be a string or a real number, not 'tuple'"),
            ("(1)(2)", "Error: 'int' object is not callable"),
            ("1(*...)", "Error: 1 argument after * must be an iterable, not ellipsis"),
            ("... /4", "Error: unsupported operand type(s) for /: 'ellipsis' and 'int'"),
            ("1**67", "1.0"), ("132**86", "2.3407664477466315e+182"),
            ("1777**649", "Error: int too large to convert to float"),
            ("9**9**9", "Error: int too large to convert to float")]:
        out = airline.run({"tool": "calculate", "arguments": {"expression": expression}}, **OK)
        assert out["output"] == answer, expression
