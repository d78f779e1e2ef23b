"""The benchmark's API over the airline database, with its exact semantics and messages.

A port of τ-bench's ``tau_bench/envs/airline/tools/*.py`` (MIT, see PROVENANCE.md): each
function takes a :class:`View` and the benchmark's keyword arguments and returns what the
benchmark returns — the changed object as JSON text, a message, or a string starting with
``Error:`` having changed nothing. The API checks only what the benchmark checks; the
policy is enforced before it runs (``rules.py``), never here.

A :class:`View` reads documents lazily through one connection and remembers what a call
changed; :meth:`View.flush` writes them back in the caller's transaction. The rules run the
same function on a view they never flush, to learn whether the API itself would refuse.
"""

from __future__ import annotations

import functools
import json
import math
import sqlite3
from collections.abc import Callable
from copy import deepcopy
from typing import Any

AIRPORTS = ["SFO", "JFK", "LAX", "ORD", "DFW", "DEN", "SEA", "ATL", "MIA", "BOS", "PHX",
            "IAH", "LAS", "MCO", "EWR", "CLT", "MSP", "DTW", "PHL", "LGA"]
CITIES = ["San Francisco", "New York", "Los Angeles", "Chicago", "Dallas", "Denver",
          "Seattle", "Atlanta", "Miami", "Boston", "Phoenix", "Houston", "Las Vegas",
          "Orlando", "Newark", "Charlotte", "Minneapolis", "Detroit", "Philadelphia",
          "LaGuardia"]
CERTIFICATE_IDS = (3221322, 3221323, 3221324)
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")


class View:
    """Documents of one connection, loaded on first use; what a call changed is kept."""

    def __init__(self, conn: sqlite3.Connection, created_at: str,
                 texts: dict[tuple[str, str], Any] | None = None) -> None:
        self.conn = conn
        self.created_at = created_at
        #: the documents' text as read (None: no row), by (query, id): shared with the
        #: views :meth:`fresh` makes
        self._texts: dict[tuple[str, str], Any] = {} if texts is None else texts
        self._users: dict[str, dict[str, Any] | None] = {}
        self._reservations: dict[str, dict[str, Any] | None] = {}
        self._flights: dict[str, dict[str, Any] | None] = {}
        self.dirty_users: set[str] = set()
        self.dirty_reservations: set[str] = set()

    def _doc(self, cache: dict[str, Any], sql: str, key: str) -> dict[str, Any] | None:
        if not isinstance(key, str):  # an agent's malformed id (a number, a list, null):
            hash(key)  # unhashable fails as the benchmark's `key in dict` does (TypeError)
            return None  # every id of the benchmark's JSON documents is a string
        if key not in cache:
            if (sql, key) in self._texts:
                text = self._texts[(sql, key)]
            else:
                row = self.conn.execute(sql, (key,)).fetchone()
                text = self._texts[(sql, key)] = None if row is None else row[0]
            cache[key] = None if text is None else json.loads(text)
        found: dict[str, Any] | None = cache[key]
        return found

    def fresh(self) -> View:
        """A view of the same connection without this one's changes: the documents this
        one read, as they were read (parsed again, not read again), the others read anew."""
        return View(self.conn, self.created_at, self._texts)

    def user(self, uid: str) -> dict[str, Any] | None:
        return self._doc(self._users, "SELECT doc FROM users WHERE user_id = ?", uid)

    def reservation(self, rid: str) -> dict[str, Any] | None:
        return self._doc(self._reservations,
                         "SELECT doc FROM reservations WHERE reservation_id = ?", rid)

    def flight(self, number: str) -> dict[str, Any] | None:
        return self._doc(self._flights, "SELECT doc FROM flights WHERE flight_number = ?",
                         number)

    def flights_from(self, origin: str) -> list[dict[str, Any]]:
        if not isinstance(origin, str):  # no airport code of the benchmark's data equals it
            return []
        return [json.loads(r[0]) for r in self.conn.execute(
            "SELECT doc FROM flights WHERE origin = ? ORDER BY rowid", (origin,))]

    def flights_between(self, origin: str, destination: str) -> list[dict[str, Any]]:
        if not isinstance(origin, str) or not isinstance(destination, str):
            return []
        return [json.loads(r[0]) for r in self.conn.execute(
            "SELECT doc FROM flights WHERE origin = ? AND destination = ? ORDER BY rowid",
            (origin, destination))]

    def flights_to(self, destination: str) -> list[dict[str, Any]]:
        if not isinstance(destination, str):
            return []
        return [json.loads(r[0]) for r in self.conn.execute(
            "SELECT doc FROM flights WHERE destination = ? ORDER BY rowid", (destination,))]

    def add_reservation(self, res: dict[str, Any]) -> None:
        self._reservations[res["reservation_id"]] = res
        self.dirty_reservations.add(res["reservation_id"])

    def flush(self) -> None:
        for uid in sorted(self.dirty_users):
            u = self._users[uid]
            assert u is not None
            self.conn.execute("UPDATE users SET doc = ? WHERE user_id = ?", (json.dumps(u), uid))
        for rid in sorted(self.dirty_reservations):
            r = self._reservations[rid]
            assert r is not None
            self.conn.execute(
                "INSERT INTO reservations VALUES (?,?,?,?) ON CONFLICT(reservation_id) DO "
                "UPDATE SET status = excluded.status, doc = excluded.doc",
                (rid, r["user_id"], r.get("status"), json.dumps(r)))


# --- writes ------------------------------------------------------------------------------

def book_reservation(v: View, user_id: str, origin: str, destination: str, flight_type: str,
                     cabin: str, flights: list[dict[str, Any]], passengers: list[dict[str, Any]],
                     payment_methods: list[dict[str, Any]], total_baggages: int,
                     nonfree_baggages: int, insurance: str) -> str:
    user = v.user(user_id)
    if user is None:
        return "Error: user not found"
    reservation_id = NEW_RESERVATION_IDS[0]
    if v.reservation(reservation_id) is not None:
        reservation_id = NEW_RESERVATION_IDS[1]
        if v.reservation(reservation_id) is not None:
            reservation_id = NEW_RESERVATION_IDS[2]
            # the benchmark writes a fourth booking over `HATHAV` (it assumes at most three
            # per task): another booked reservation gone, no cancellation, no refund — refused
            # as a fourth certificate is (tests/security/test_565)
            if v.reservation(reservation_id) is not None:
                return "Error: no reservation id left for a new booking"
    reservation: dict[str, Any] = {
        "reservation_id": reservation_id, "user_id": user_id, "origin": origin,
        "destination": destination, "flight_type": flight_type, "cabin": cabin,
        "flights": deepcopy(flights), "passengers": passengers,
        "payment_history": payment_methods, "created_at": v.created_at,
        "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages,
        "insurance": insurance}
    total_price: float = 0
    for flight in reservation["flights"]:
        number = flight["flight_number"]
        data = v.flight(number)
        if data is None:
            return f"Error: flight {number} not found"
        if flight["date"] not in data["dates"]:
            return f"Error: flight {number} not found on date {flight['date']}"
        day = data["dates"][flight["date"]]
        if day["status"] != "available":
            return f"Error: flight {number} not available on date {flight['date']}"
        if day["available_seats"][cabin] < len(passengers):
            return f"Error: not enough seats on flight {number}"
        flight["price"] = day["prices"][cabin]
        flight["origin"] = data["origin"]
        flight["destination"] = data["destination"]
        total_price += flight["price"] * len(passengers)
    if insurance == "yes":
        total_price += 30 * len(passengers)
    total_price += 50 * nonfree_baggages
    for method in payment_methods:
        pid, amount = method["payment_id"], method["amount"]
        if pid not in user["payment_methods"]:
            return f"Error: payment method {pid} not found"
        if user["payment_methods"][pid]["source"] in ["gift_card", "certificate"] and (
                user["payment_methods"][pid]["amount"] < amount):
            return f"Error: not enough balance in payment method {pid}"
    paid = sum(m["amount"] for m in payment_methods)
    if paid != total_price:
        return (f"Error: payment amount does not add up, total price is {total_price}, "
                f"but paid {paid}")
    for method in payment_methods:
        pid, amount = method["payment_id"], method["amount"]
        if user["payment_methods"][pid]["source"] == "gift_card":
            user["payment_methods"][pid]["amount"] -= amount
        elif user["payment_methods"][pid]["source"] == "certificate":
            del user["payment_methods"][pid]
    v.add_reservation(reservation)
    user["reservations"].append(reservation_id)
    v.dirty_users.add(user_id)
    return json.dumps(reservation)


def cancel_reservation(v: View, reservation_id: str) -> str:
    reservation = v.reservation(reservation_id)
    if reservation is None:
        return "Error: reservation not found"
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]}
               for p in reservation["payment_history"]]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    v.dirty_reservations.add(reservation_id)
    return json.dumps(reservation)


def update_reservation_flights(v: View, reservation_id: str, cabin: str,
                               flights: list[dict[str, Any]], payment_id: str) -> str:
    reservation = v.reservation(reservation_id)
    if reservation is None:
        return "Error: reservation not found"
    npass = len(reservation["passengers"])
    total_price: float = 0
    flights = deepcopy(flights)
    for flight in flights:
        kept = [f for f in reservation["flights"]
                if f["flight_number"] == flight["flight_number"] and f["date"] == flight["date"]
                and cabin == reservation["cabin"]]
        if kept:
            total_price += kept[0]["price"] * npass
            flight["price"] = kept[0]["price"]
            flight["origin"] = kept[0]["origin"]
            flight["destination"] = kept[0]["destination"]
            continue
        number = flight["flight_number"]
        data = v.flight(number)
        if data is None:
            return f"Error: flight {number} not found"
        if flight["date"] not in data["dates"]:
            return f"Error: flight {number} not found on date {flight['date']}"
        day = data["dates"][flight["date"]]
        if day["status"] != "available":
            return f"Error: flight {number} not available on date {flight['date']}"
        if day["available_seats"][cabin] < npass:
            return f"Error: not enough seats on flight {number}"
        flight["price"] = day["prices"][cabin]
        flight["origin"] = data["origin"]
        flight["destination"] = data["destination"]
        total_price += flight["price"] * npass
    total_price -= sum(f["price"] for f in reservation["flights"]) * npass
    owner = v.user(reservation["user_id"])
    if owner is None or payment_id not in owner["payment_methods"]:
        return "Error: payment method not found"
    method = owner["payment_methods"][payment_id]
    if method["source"] == "certificate":
        return "Error: certificate cannot be used to update reservation"
    if method["source"] == "gift_card" and method["amount"] < total_price:
        return "Error: gift card balance is not enough"
    if method["source"] == "gift_card":
        method["amount"] -= total_price
        v.dirty_users.add(reservation["user_id"])
    reservation["flights"] = flights
    if total_price != 0:
        reservation["payment_history"].append({"payment_id": payment_id, "amount": total_price})
    v.dirty_reservations.add(reservation_id)
    return json.dumps(reservation)


def update_reservation_baggages(v: View, reservation_id: str, total_baggages: int,
                                nonfree_baggages: int, payment_id: str) -> str:
    reservation = v.reservation(reservation_id)
    if reservation is None:
        return "Error: reservation not found"
    total_price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    owner = v.user(reservation["user_id"])
    if owner is None or payment_id not in owner["payment_methods"]:
        return "Error: payment method not found"
    method = owner["payment_methods"][payment_id]
    if method["source"] == "certificate":
        return "Error: certificate cannot be used to update reservation"
    if method["source"] == "gift_card" and method["amount"] < total_price:
        return "Error: gift card balance is not enough"
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    if method["source"] == "gift_card":
        method["amount"] -= total_price
        v.dirty_users.add(reservation["user_id"])
    if total_price != 0:
        reservation["payment_history"].append({"payment_id": payment_id, "amount": total_price})
    v.dirty_reservations.add(reservation_id)
    return json.dumps(reservation)


def update_reservation_passengers(v: View, reservation_id: str,
                                  passengers: list[dict[str, Any]]) -> str:
    reservation = v.reservation(reservation_id)
    if reservation is None:
        return "Error: reservation not found"
    if len(passengers) != len(reservation["passengers"]):
        return "Error: number of passengers does not match"
    reservation["passengers"] = passengers
    v.dirty_reservations.add(reservation_id)
    return json.dumps(reservation)


def send_certificate(v: View, user_id: str, amount: float) -> str:
    user = v.user(user_id)
    if user is None:
        return "Error: user not found"
    for number in CERTIFICATE_IDS:
        pid = f"certificate_{number}"
        if pid not in user["payment_methods"]:
            user["payment_methods"][pid] = {"source": "certificate", "amount": amount, "id": pid}
            v.dirty_users.add(user_id)
            return f"Certificate {pid} added to user {user_id} with amount {amount}."
    # the benchmark returns None here (it assumes at most three per task)
    return "Error: no certificate id left for this user"


# --- reads -------------------------------------------------------------------------------

def get_user_details(v: View, user_id: str) -> str:
    user = v.user(user_id)
    return "Error: user not found" if user is None else json.dumps(user)


def get_reservation_details(v: View, reservation_id: str) -> str:
    res = v.reservation(reservation_id)
    return "Error: user not found" if res is None else json.dumps(res)  # sic, as the benchmark


def search_direct_flight(v: View, origin: str, destination: str, date: str) -> str:
    results = []
    for flight in v.flights_between(origin, destination):
        if date in flight["dates"] and flight["dates"][date]["status"] == "available":
            results.append({k: x for k, x in flight.items() if k != "dates"})
            results[-1].update(flight["dates"][date])
    return json.dumps(results)


def search_onestop_flight(v: View, origin: str, destination: str, date: str) -> str:
    results = []
    seconds = v.flights_to(destination)
    for f1 in v.flights_from(origin):
        for f2 in seconds:
            if f1["destination"] != f2["origin"]:
                continue
            date2 = (f"2024-05-{int(date[-2:]) + 1}" if "+1" in f1["scheduled_arrival_time_est"]
                     else date)
            if f1["scheduled_arrival_time_est"] > f2["scheduled_departure_time_est"]:
                continue
            if date in f1["dates"] and date2 in f2["dates"] and (
                    f1["dates"][date]["status"] == "available"
                    and f2["dates"][date2]["status"] == "available"):
                r1 = {k: x for k, x in f1.items() if k != "dates"}
                r1.update(f1["dates"][date])
                r1["date"] = date
                r2 = {k: x for k, x in f2.items() if k != "dates"}
                r2.update(f2["dates"][date])  # sic: the benchmark reads the first leg's date
                r2["date"] = date2
                results.append([r1, r2])
    return json.dumps(results)


def list_all_airports(v: View) -> str:
    return json.dumps(dict(zip(AIRPORTS, CITIES, strict=True)))


def calculate(v: View, expression: str) -> str:
    if not all(ch in "0123456789+-*/(). " for ch in expression):
        return "Error: invalid characters in expression"
    if not isinstance(expression, str):  # an empty list or object passes the check above
        return "Error: eval() arg 1 must be a string, bytes or code object"
    try:
        return str(round(float(_arith(expression)), 2))
    except Exception as exc:  # the benchmark returns the error text
        return f"Error: {exc}"


def transfer_to_human_agents(v: View, summary: str) -> str:
    return "Transfer successful"


def think(v: View, thought: str) -> str:
    return ""  # the benchmark's: the thought goes to the log, nothing is read or changed


def _arith(expression: str) -> Any:
    """``+ - * / ( )`` and numbers, evaluated as ``eval`` does, without ``eval``: leading
    spaces stripped first (``eval`` of a string strips them: ``" 121*2"`` is 242), ``()``
    an empty tuple, ``...`` the ellipsis and ``(1)(2)`` a call of a number, each failing
    where and as ``eval``'s does. One deviation: an integer power past 4096 bits is not
    computed (``9**9**9``) but fails as the benchmark's answer on it almost always does."""
    import ast
    import operator

    ops: dict[type, Any] = {ast.Add: operator.add, ast.Sub: operator.sub,
                            ast.Mult: operator.mul, ast.Div: operator.truediv,
                            ast.FloorDiv: operator.floordiv, ast.Pow: _power,
                            ast.USub: operator.neg, ast.UAdd: operator.pos}

    def ev(node: ast.AST) -> Any:  # ints stay ints, as under `eval`
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and (isinstance(node.value, int | float)
                                               or node.value is Ellipsis):  # `...`
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in ops:
            return ops[type(node.op)](ev(node.operand))
        if isinstance(node, ast.Tuple):  # `()`: the characters allowed have no comma
            return tuple(ev(e) for e in node.elts)
        if isinstance(node, ast.Call) and not node.keywords:  # `(1)(2)`: a number called
            called, args = ev(node.func), []
            for arg in node.args:
                if not isinstance(arg, ast.Starred):
                    args.append(ev(arg))
                    continue
                value = ev(arg.value)
                if not isinstance(value, tuple):
                    raise TypeError(f"{called} argument after * must be an iterable, not "
                                    f"{type(value).__name__}")
                args.extend(value)
            return called(*args)  # a number or a tuple: never callable, eval's TypeError
        raise ValueError("invalid syntax")
    return ev(ast.parse(expression.lstrip(" \t"), filename="<string>", mode="eval"))


def _power(base: Any, exponent: Any) -> Any:
    if not all(isinstance(x, int | float) for x in (base, exponent)):
        return base**exponent  # a tuple: eval's TypeError
    # what `eval` would compute for hours (`9**9**9`): an exact integer past 4096 bits, far
    # beyond what a float holds — the benchmark's answer once computed, `float()` failing on
    # it (a float's power is one operation, and fails as eval's does)
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and (
            abs(base) > 1 and exponent * math.log2(abs(base)) > 4096):
        raise OverflowError("int too large to convert to float")
    return base**exponent


# --- the benchmark's signatures: what ``Env.step``'s call binds ----------------------------
# ``Env.step`` calls ``<Tool>.invoke(data=self.data, **action.kwargs)`` with the agent's
# arguments as they came (JSON: nothing is coerced); a missing, unknown or doubled argument
# fails in that call, before the tool runs, with Python's own words naming
# ``<Tool>.invoke``. These stubs have the benchmark's parameters, in its order, so the port
# binds an agent's arguments exactly as the benchmark does and fails with the same text.

class BookReservation:
    @staticmethod
    def invoke(data: Any, user_id: Any, origin: Any, destination: Any, flight_type: Any,
               cabin: Any, flights: Any, passengers: Any, payment_methods: Any,
               total_baggages: Any, nonfree_baggages: Any, insurance: Any) -> None:
        """The signature only."""


class CancelReservation:
    @staticmethod
    def invoke(data: Any, reservation_id: Any) -> None:
        """The signature only."""


class UpdateReservationFlights:
    @staticmethod
    def invoke(data: Any, reservation_id: Any, cabin: Any, flights: Any,
               payment_id: Any) -> None:
        """The signature only."""


class UpdateReservationBaggages:
    @staticmethod
    def invoke(data: Any, reservation_id: Any, total_baggages: Any, nonfree_baggages: Any,
               payment_id: Any) -> None:
        """The signature only."""


class UpdateReservationPassengers:
    @staticmethod
    def invoke(data: Any, reservation_id: Any, passengers: Any) -> None:
        """The signature only."""


class SendCertificate:
    @staticmethod
    def invoke(data: Any, user_id: Any, amount: Any) -> None:
        """The signature only."""


class GetUserDetails:
    @staticmethod
    def invoke(data: Any, user_id: Any) -> None:
        """The signature only."""


class GetReservationDetails:
    @staticmethod
    def invoke(data: Any, reservation_id: Any) -> None:
        """The signature only."""


class SearchDirectFlight:
    @staticmethod
    def invoke(data: Any, origin: Any, destination: Any, date: Any) -> None:
        """The signature only."""


class SearchOnestopFlight:
    @staticmethod
    def invoke(data: Any, origin: Any, destination: Any, date: Any) -> None:
        """The signature only."""


class ListAllAirports:
    @staticmethod
    def invoke(data: Any) -> None:
        """The signature only."""


class Calculate:
    @staticmethod
    def invoke(data: Any, expression: Any) -> None:
        """The signature only."""


class TransferToHumanAgents:
    @staticmethod
    def invoke(data: Any, summary: Any) -> None:
        """The signature only."""


class Think:
    @staticmethod
    def invoke(data: Any, thought: Any) -> None:
        """The signature only."""


def _as_the_environment(fn: Callable[..., str],
                        signature: Callable[..., None]) -> Callable[..., str]:
    """The benchmark's environment calls a tool inside ``try`` and answers what it raises as
    ``Error: <exception>`` (``tau_bench/envs/base.py``, ``Env.step``): the arguments bound
    as its call binds them (``signature``: a missing or unknown argument is
    ``Error: BookReservation.invoke() missing 1 required positional argument: 'insurance'``),
    and what the tool raises on values of the wrong type (a payment ``amount`` of ``"121"``:
    ``Error: unsupported operand type(s) for +: 'int' and 'str'``; a cabin ``Economy``:
    ``Error: 'Economy'``) or on a certificate listed twice in a booking (removed at its first
    line, it fails at the second with ``KeyError``). The database's own errors are not the
    API's answer: they propagate. Unlike the benchmark's, a view a failed call changed is
    never flushed: nothing of it is kept."""
    @functools.wraps(fn)
    def call(v: View, /, **kwargs: Any) -> str:
        try:
            signature(data=v, **kwargs)
            return fn(v, **kwargs)
        except sqlite3.Error:
            raise
        except Exception as exc:  # the benchmark's environment does the same
            return f"Error: {exc}"
    return call


def _benchmark(name: str, signature: Callable[..., None]) -> Callable[..., None]:
    """``signature`` named as the benchmark's: Python names a function by its module too
    when an argument is given twice at the call (``data``)."""
    signature.__module__ = f"tau_bench.envs.airline.tools.{name}"
    return signature


WRITES = {name: _as_the_environment(fn, _benchmark(name, sig)) for name, (fn, sig) in {
    "book_reservation": (book_reservation, BookReservation.invoke),
    "cancel_reservation": (cancel_reservation, CancelReservation.invoke),
    "update_reservation_flights": (update_reservation_flights,
                                   UpdateReservationFlights.invoke),
    "update_reservation_baggages": (update_reservation_baggages,
                                    UpdateReservationBaggages.invoke),
    "update_reservation_passengers": (update_reservation_passengers,
                                      UpdateReservationPassengers.invoke),
    "send_certificate": (send_certificate, SendCertificate.invoke)}.items()}
READS = {name: _as_the_environment(fn, _benchmark(name, sig)) for name, (fn, sig) in {
    "get_user_details": (get_user_details, GetUserDetails.invoke),
    "get_reservation_details": (get_reservation_details, GetReservationDetails.invoke),
    "search_direct_flight": (search_direct_flight, SearchDirectFlight.invoke),
    "search_onestop_flight": (search_onestop_flight, SearchOnestopFlight.invoke),
    "list_all_airports": (list_all_airports, ListAllAirports.invoke),
    "calculate": (calculate, Calculate.invoke),
    "transfer_to_human_agents": (transfer_to_human_agents, TransferToHumanAgents.invoke),
    "think": (think, Think.invoke)}.items()}
