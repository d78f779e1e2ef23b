"""What ``pack init travel.airline --data DIR`` accepts: the benchmark's three files, each
record checked field by field before anything is written.

The data directory is not trusted (pack README, "Trust model"): a record the rules or the API
would misread — a membership that is no tier, an origin that is a list, a bag count that is a
string, an id holding a NUL, a reservation of a customer who does not exist — is refused with
one line naming the file, the record and the field, and the home is left as it was. Fields
the rules never read (names, addresses, times of day) are kept as they are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from cradle_kg.packs.sdk import InputError

MEMBERSHIPS = ("regular", "silver", "gold")
SOURCES = ("credit_card", "gift_card", "certificate")
CABINS = ("basic_economy", "economy", "business")
TRIP_TYPES = ("one_way", "round_trip")
FLIGHT_STATUSES = ("available", "delayed", "on time", "flying", "landed", "cancelled")
INSURANCE = ("yes", "no")
#: what a reservation's ``status`` may say (absent: active)
RESERVATION_STATUSES = (None, "cancelled")

#: ids, codes and dates: printable, one line, no longer than any id the runtime takes
MAX_ID = 256
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class _Where:
    """Where a value sits, for the one-line error."""

    def __init__(self, file: Path, record: str) -> None:
        self.file, self.record = file, record

    def fail(self, field: str, problem: str) -> InputError:
        return InputError(f"`{self.file}`: record `{_short(self.record)}`, `{field}`: {problem}",
                          hint="the data directory must be in the benchmark's format "
                               "(τ-bench airline: users.json, flights.json, reservations.json)")

    def ident(self, value: Any, field: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(field, f"expected a non-empty string, got {_kind(value)}")
        if len(value) > MAX_ID or _UNPRINTABLE.search(value):
            raise self.fail(field, "longer than 256 characters or holds a control character")
        return value

    def one_of(self, value: Any, field: str, allowed: tuple[Any, ...]) -> None:
        if value not in allowed or isinstance(value, bool):
            shown = ", ".join("absent" if a is None else f"`{a}`" for a in allowed)
            raise self.fail(field, f"`{_short(str(value))}` is none of {shown}")

    def count(self, value: Any, field: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(field, f"expected a whole number >= 0, got {_kind(value)}")
        return value

    def amount(self, value: Any, field: str) -> float:
        if (isinstance(value, bool) or not isinstance(value, int | float)
                or not math.isfinite(value) or value < 0):
            raise self.fail(field, f"expected an amount >= 0, got {_kind(value)}")
        return float(value)

    def date(self, value: Any, field: str) -> str:
        text = self.ident(value, field)
        try:
            if not _DATE.fullmatch(text):
                raise ValueError(text)
            datetime.strptime(text, "%Y-%m-%d")
        except ValueError:
            raise self.fail(field, f"`{_short(text)}` is not a date (YYYY-MM-DD)") from None
        return text

    def mapping(self, value: Any, field: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field, f"expected an object, got {_kind(value)}")
        return value

    def items(self, value: Any, field: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(field, f"expected a list, got {_kind(value)}")
        return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}" if isinstance(value, int) or math.isfinite(value) \
            else "a number that is not finite"
    if isinstance(value, str):
        return f"the string `{_short(value)}`"
    return "an object" if isinstance(value, dict) else "a list" if isinstance(value, list) \
        else type(value).__name__


def _short(text: str, limit: int = 60) -> str:
    shown = _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return shown if len(shown) <= limit else shown[:limit] + "…"


def check_users(file: Path, users: Mapping[str, Any]) -> None:
    for uid, user in users.items():
        at = _Where(file, uid)
        at.ident(uid, "(its id)")
        at.one_of(user.get("membership", "regular"), "membership", MEMBERSHIPS)
        for pid, method in at.mapping(user.get("payment_methods"), "payment_methods").items():
            field = f"payment_methods.{_short(pid)}"
            at.ident(pid, field)
            method = at.mapping(method, field)
            at.one_of(method.get("source"), f"{field}.source", SOURCES)
            if method.get("source") in ("gift_card", "certificate"):
                at.amount(method.get("amount"), f"{field}.amount")
        for index, rid in enumerate(at.items(user.get("reservations"), "reservations")):
            at.ident(rid, f"reservations[{index}]")


def check_flights(file: Path, flights: Mapping[str, Any]) -> None:
    for number, flight in flights.items():
        at = _Where(file, number)
        at.ident(number, "(its id)")
        for field in ("origin", "destination"):
            at.ident(flight.get(field), field)
        if flight.get("flight_number", number) != number:
            raise at.fail("flight_number", "differs from the record's id")
        for day, state in at.mapping(flight.get("dates"), "dates").items():
            field = f"dates.{_short(str(day))}"
            at.date(day, field)
            state = at.mapping(state, field)
            at.one_of(state.get("status"), f"{field}.status", FLIGHT_STATUSES)
            if state.get("status") == "available":
                seats = at.mapping(state.get("available_seats"), f"{field}.available_seats")
                prices = at.mapping(state.get("prices"), f"{field}.prices")
                for cabin, left in seats.items():
                    at.one_of(cabin, f"{field}.available_seats", CABINS)
                    at.count(left, f"{field}.available_seats.{cabin}")
                for cabin, price in prices.items():
                    at.one_of(cabin, f"{field}.prices", CABINS)
                    at.amount(price, f"{field}.prices.{cabin}")


def check_reservations(file: Path, reservations: Mapping[str, Any],
                       users: Mapping[str, Any], flights: Mapping[str, Any]) -> None:
    for rid, res in reservations.items():
        at = _Where(file, rid)
        at.ident(rid, "(its id)")
        if res.get("reservation_id", rid) != rid:
            raise at.fail("reservation_id", "differs from the record's id")
        uid = at.ident(res.get("user_id"), "user_id")
        if uid not in users:
            raise at.fail("user_id", f"no user `{_short(uid)}` in users.json")
        for field in ("origin", "destination"):
            at.ident(res.get(field), field)
        at.one_of(res.get("flight_type"), "flight_type", TRIP_TYPES)
        at.one_of(res.get("cabin"), "cabin", CABINS)
        at.one_of(res.get("insurance"), "insurance", INSURANCE)
        at.one_of(res.get("status"), "status", RESERVATION_STATUSES)
        created = at.ident(res.get("created_at"), "created_at")
        try:
            datetime.fromisoformat(created)
        except ValueError:
            raise at.fail("created_at", f"`{_short(created)}` is not a date and time") \
                from None
        total = at.count(res.get("total_baggages"), "total_baggages")
        if at.count(res.get("nonfree_baggages"), "nonfree_baggages") > total:
            raise at.fail("nonfree_baggages", "more than total_baggages")
        for index, segment in enumerate(at.items(res.get("flights"), "flights")):
            field = f"flights[{index}]"
            segment = at.mapping(segment, field)
            for key in ("flight_number", "origin", "destination"):
                at.ident(segment.get(key), f"{field}.{key}")
            day = at.date(segment.get("date"), f"{field}.date")
            # a segment of a flight or a day flights.json does not hold has no status,
            # which a rule would read as "not flown" (tests/security/test_149)
            flight = flights.get(segment["flight_number"])
            if flight is None:
                raise at.fail(f"{field}.flight_number", f"no flight "
                              f"`{_short(segment['flight_number'])}` in flights.json")
            if day not in flight["dates"]:
                raise at.fail(f"{field}.date", f"flight `{_short(segment['flight_number'])}` "
                              f"has no `{day}` in flights.json")
            at.amount(segment.get("price"), f"{field}.price")
        for index, person in enumerate(at.items(res.get("passengers"), "passengers")):
            person = at.mapping(person, f"passengers[{index}]")
            for key in ("first_name", "last_name", "dob"):
                if not isinstance(person.get(key), str):
                    raise at.fail(f"passengers[{index}].{key}",
                                  f"expected a string, got {_kind(person.get(key))}")
        for index, paid in enumerate(at.items(res.get("payment_history"), "payment_history")):
            field = f"payment_history[{index}]"
            paid = at.mapping(paid, field)
            at.ident(paid.get("payment_id"), f"{field}.payment_id")
            if isinstance(paid.get("amount"), bool) or not isinstance(
                    paid.get("amount"), int | float) or not math.isfinite(paid["amount"]):
                raise at.fail(f"{field}.amount", f"expected a number, got "
                              f"{_kind(paid.get('amount'))}")


def check_lists(file: Path, users: Mapping[str, Any],
                reservations: Mapping[str, Any]) -> None:
    """Each customer's list names their own reservations only: a compensation is decided
    on this list, ownership on the reservation's ``user_id`` — a list naming another
    customer's insured, cancelled trip paid a certificate for it
    (``tests/security/test_149``) — and each once: a gesture is one per reservation
    concerned, and one listed twice was paid twice (``tests/security/test_567``)."""
    for uid, user in users.items():
        at = _Where(file, uid)
        seen: set[str] = set()
        for index, rid in enumerate(user["reservations"]):
            if rid in seen:
                raise at.fail(f"reservations[{index}]",
                              f"reservation `{_short(rid)}` is listed twice")
            seen.add(rid)
            owner = reservations[rid]["user_id"] if rid in reservations else None
            if owner != uid:
                held = "no such reservation in reservations.json" if owner is None \
                    else f"its `user_id` is `{_short(str(owner))}`"
                raise at.fail(f"reservations[{index}]",
                              f"reservation `{_short(rid)}` is not this user's ({held})")


def check_data(folder: Path, users: Mapping[str, Any], flights: Mapping[str, Any],
               reservations: Mapping[str, Any]) -> None:
    """Every record of the three files, or an :class:`InputError` naming the first bad one."""
    check_users(folder / "users.json", users)
    check_flights(folder / "flights.json", flights)
    check_reservations(folder / "reservations.json", reservations, users, flights)
    check_lists(folder / "users.json", users, reservations)


__all__ = ["check_data"]
