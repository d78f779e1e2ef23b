"""AUDIT TOOL, not part of the pack's enforcement: an independent oracle for ``wiki.md``.

The fourth audit of the pack (README, "Fourth audit") is differential: this module was
written from ``wiki.md`` alone, without reading ``rules.py``, and judges one write call on a
database in the benchmark's format (``users`` / ``reservations`` / ``flights`` dicts, as in
``shared/data/tau-airline``) at the policy's clock:

    judge(data, tool, args, customer, said, now) -> Verdict

``Verdict.kind`` is ``"respects"``, ``"breaks"`` (with the sentence of wiki.md broken) or
``"api_error"`` (the benchmark's own API answers ``Error: …``: not a policy decision; the
error must come back unchanged). The API's answer is the benchmark's own code: the tool
modules of a τ-bench checkout (``--tau``, a git mirror of ``sierra-research/tau-bench``),
run on a copy of the touched records. ``said`` holds the customer's statements
(``airline:confirmed``, ``airline:cancellationReason``, ``airline:compensationRequested``).

``audit_airline.py`` (beside this file) generates the calls, runs them through the pack and
through this oracle, and counts the disagreements by class.
"""

from __future__ import annotations

import importlib.util
import itertools
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable, Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

NOW = datetime(2024, 5, 15, 15, 0, 0)  # "The current time is 2024-05-15 15:00:00 EST."

S_CONFIRM = ("Before taking any actions that update the booking database (booking, modifying "
             "flights, editing baggage, upgrading cabin class, or updating passenger "
             "information), you must list the action details and obtain explicit user "
             "confirmation (yes) to proceed.")
S_USER = "The agent must first obtain the user id"
S_FIVE = "Each reservation can have at most five passengers."
S_PAY = ("each reservation can use at most one travel certificate, at most one credit card, "
         "and at most three gift cards.")
S_BAGS = "Checked bag allowance: … Each extra baggage is 50 dollars."
S_TRIP = "The agent must first obtain the user id, then ask for the trip type, origin, destination."
S_BASIC = "Basic economy flights cannot be modified."
S_ROUTE = ("Other reservations can be modified without changing the origin, destination, "
           "and trip type.")
S_CABIN = ("Cabin class must be the same across all the flights in the same reservation; "
           "changing cabin for just one flight segment is not possible.")
S_REMOVE = "The user can add but not remove checked bags."
S_CHANGE_PAY = ("If the flights are changed, the user needs to provide one gift card or credit "
                "card for payment or refund method.")
S_REASON = ("The agent must first obtain the user id, the reservation id, and the reason for "
            "cancellation")
S_CANCEL = ("All reservations can be cancelled within 24 hours of booking, or if the airline "
            "cancelled the flight. Otherwise, basic economy or economy flights can be cancelled "
            "only if travel insurance is bought and the condition is met, and business flights "
            "can always be cancelled.")
S_FLOWN = ("The agent can only cancel the whole trip that is not flown. If any of the segments "
           "are already used, the agent cannot help and transfer is needed.")
S_ASK = ("Do not proactively offer these unless the user complains about the situation and "
         "explicitly asks for some compensation.")
S_ELIGIBLE = ("If the user is silver/gold member or has travel insurance or flies business … "
              "Do not compensate if the user is regular member and has no travel insurance and "
              "flies (basic) economy.")
S_AMOUNT = "… with the amount being $100 [$50] times the number of passengers."
S_FACTS = "… the agent can offer a certificate as a gesture after confirming the facts"
S_DONE = "(a cancelled reservation: nothing is left to cancel or change)"

CABINS = ("basic_economy", "economy", "business")
#: free checked bags a passenger, by membership and cabin (Checked bag allowance)
FREE = {"regular": {"basic_economy": 0, "economy": 1, "business": 2},
        "silver": {"basic_economy": 1, "economy": 2, "business": 3},
        "gold": {"basic_economy": 2, "economy": 3, "business": 3}}


@dataclass(frozen=True)
class Verdict:
    kind: str            # respects | breaks | api_error
    sentence: str = ""   # the sentence of wiki.md broken (breaks), the API's error (api_error)
    detail: str = ""


OK = Verdict("respects")


def _breaks(sentence: str, detail: str = "") -> Verdict:
    return Verdict("breaks", sentence, detail)


# --- the benchmark's API, its own code ------------------------------------------------------

TOOLS = {"book_reservation": "BookReservation", "cancel_reservation": "CancelReservation",
         "update_reservation_flights": "UpdateReservationFlights",
         "update_reservation_baggages": "UpdateReservationBaggages",
         "update_reservation_passengers": "UpdateReservationPassengers",
         "send_certificate": "SendCertificate"}


def load_benchmark_tools(mirror: Path) -> dict[str, Callable[..., str]]:
    """The write tools' ``invoke`` from a τ-bench git mirror (``git show HEAD:…``), each module
    loaded on its own with a stand-in ``tau_bench.envs.tool.Tool``."""
    tool_mod = types.ModuleType("tau_bench.envs.tool")

    class Tool:  # the benchmark's abstract base: nothing the writes use
        pass

    tool_mod.Tool = Tool  # type: ignore[attr-defined]
    for name in ("tau_bench", "tau_bench.envs"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["tau_bench.envs.tool"] = tool_mod
    out: dict[str, Callable[..., str]] = {}
    with tempfile.TemporaryDirectory(prefix="tau-tools-") as tmp:
        for tool, cls in TOOLS.items():
            src = subprocess.run(
                ["git", "-C", str(mirror), "show", f"HEAD:tau_bench/envs/airline/tools/{tool}.py"],
                check=True, capture_output=True, text=True).stdout
            path = Path(tmp) / f"{tool}.py"
            path.write_text(src, encoding="utf-8")
            spec = importlib.util.spec_from_file_location(f"tau_tool_{tool}", path)
            assert spec and spec.loader
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            out[tool] = getattr(mod, cls).invoke
    return out


def api_answer(tools: Mapping[str, Callable[..., str]], data: Mapping[str, Any], tool: str,
               args: Mapping[str, Any]) -> str:
    """The benchmark's answer on a copy of what the call can touch (its user and
    reservation), as its environment answers it (an exception is ``Error: <exception>``)."""
    users = dict(data["users"])
    reservations = dict(data["reservations"])
    rid = args.get("reservation_id")
    if isinstance(rid, str) and rid in reservations:
        reservations[rid] = deepcopy(reservations[rid])
        uid = reservations[rid]["user_id"]
        users[uid] = deepcopy(users[uid])
    uid = args.get("user_id")
    if isinstance(uid, str) and uid in users:
        users[uid] = deepcopy(users[uid])
    copy = {"users": users, "reservations": reservations, "flights": data["flights"]}
    try:
        return str(tools[tool](data=copy, **args))
    except Exception as e:
        return f"Error: {e}"


# --- facts the database shows ---------------------------------------------------------------

def _status(data: Mapping[str, Any], seg: Mapping[str, Any]) -> dict[str, Any]:
    flight = data["flights"].get(seg["flight_number"]) or {}
    found: dict[str, Any] = flight.get("dates", {}).get(seg["date"]) or {}
    return found


def _flown(data: Mapping[str, Any], seg: Mapping[str, Any]) -> bool:
    """A segment already used: its flight took off (flying) or landed that day."""
    return _status(data, seg).get("status") in ("flying", "landed")


def _was_delayed(data: Mapping[str, Any], seg: Mapping[str, Any]) -> bool:
    """The flight of the segment is delayed, or took off or arrived later than scheduled
    (a flight that left late is a delayed flight, whenever it arrived)."""
    st = _status(data, seg)
    if st.get("status") == "delayed":
        return True
    flight = data["flights"][seg["flight_number"]]
    dep = datetime.fromisoformat(f"{seg['date']}T{flight['scheduled_departure_time_est']}")
    left = st.get("actual_departure_time_est")
    if left and datetime.fromisoformat(left) > dep:
        return True
    actual = st.get("actual_arrival_time_est")
    if not actual:
        return False
    when, _, days = flight["scheduled_arrival_time_est"].partition("+")  # "02:30:00+1"
    arr = datetime.fromisoformat(f"{seg['date']}T{when}") + timedelta(days=int(days or 0))
    if arr < dep:
        arr += timedelta(days=1)  # an overnight flight
    return datetime.fromisoformat(actual) > arr


def _connects(segs: list[Mapping[str, Any]], data: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = []
    for s in segs:
        f = data["flights"].get(s["flight_number"])
        if f is None:
            return []
        out.append((f["origin"], f["destination"]))
    return out


def _back_in_time(segs: list[Mapping[str, Any]]) -> bool:
    """A segment dated before the one it follows (the day: the benchmark's data lists some
    same-day returns before their outbound lands) — the trip, flown in date order, is
    another (twenty-fourth review)."""
    return any(str(b["date"]) < str(a["date"]) for a, b in itertools.pairwise(segs))


def _trip_ok(legs: list[tuple[str, str]], origin: str, destination: str, kind: str) -> bool:
    """The legs, in order, go origin → destination (one way), or origin → destination →
    origin (round trip), each leg leaving from where the previous one arrived."""
    if not legs or legs[0][0] != origin:
        return False
    for a, b in itertools.pairwise(legs):
        if a[1] != b[0]:
            return False
    stops = [legs[0][0]] + [leg[1] for leg in legs]
    if kind == "one_way":
        return stops[-1] == destination and origin not in stops[1:]
    if kind == "round_trip":
        return stops[-1] == origin and destination in stops[1:-1]
    return False


# --- the oracle ---------------------------------------------------------------------------

def judge(data: Mapping[str, Any], tool: str, args: Mapping[str, Any], customer: str | None,
          said: Mapping[str, str], now: datetime = NOW,
          api: Mapping[str, Callable[..., str]] | None = None,
          history: Sequence[Mapping[str, Any]] = ()) -> Verdict:
    """``history``: the writes executed earlier in the same conversation, each
    ``{"tool", "args", "before"}`` (``before``: the reservation it changed, as it was)."""
    if api is not None:
        answer = api_answer(api, data, tool, args)
        if answer.startswith("Error"):
            return Verdict("api_error", answer)
    if tool == "send_certificate":
        return _certificate(data, args, customer, said, now, history)
    return {"book_reservation": _book, "cancel_reservation": _cancel,
            "update_reservation_flights": _flights, "update_reservation_baggages": _bags,
            "update_reservation_passengers": _passengers}[tool](data, args, customer, said, now)


def apply(tools: Mapping[str, Callable[..., str]], data: dict[str, Any], tool: str,
          args: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The benchmark's API run on a copy; the data after it. The API leaves a reservation's
    ``cabin`` as it was after a change of cabin: the copy records the cabin the call set (the
    cabin the reservation now flies), which is what the policy's sentences speak of."""
    users = dict(data["users"])
    reservations = dict(data["reservations"])
    rid = args.get("reservation_id")
    if isinstance(rid, str) and rid in reservations:
        reservations[rid] = deepcopy(reservations[rid])
        users[reservations[rid]["user_id"]] = deepcopy(users[reservations[rid]["user_id"]])
    uid = args.get("user_id")
    if isinstance(uid, str) and uid in users:
        users[uid] = deepcopy(users[uid])
    new = {"users": users, "reservations": reservations, "flights": data["flights"]}
    try:
        answer = str(tools[tool](data=new, **args))
    except Exception as e:
        return f"Error: {e}", data
    if answer.startswith("Error"):
        return answer, data
    if tool == "update_reservation_flights":
        # what the reservation flies now: each kept segment stays in the cabin it flew (the
        # API keeps it only when the cabin named is the record's), the others are in the cabin
        # named; the API's own record is left as the API leaves it
        old = data["reservations"][rid]
        kept = {(f["flight_number"], f["date"]) for f in old["flights"]} \
            if args["cabin"] == old["cabin"] else set()
        was = cabin_of(data, old)
        new["cabin_now"] = {**data.get("cabin_now", {}), rid: sorted(
            {was if (f["flight_number"], f["date"]) in kept else args["cabin"]
             for f in args["flights"]})}
    return answer, new


def cabin_of(data: Mapping[str, Any], res: Mapping[str, Any]) -> str:
    """The cabin the reservation flies (its record's, unless a change of cabin in the
    conversation moved it: the API does not update the record)."""
    now = data.get("cabin_now", {}).get(res["reservation_id"])
    return str(now[0]) if now and len(now) == 1 else str(res["cabin"])


def _owner(customer: str | None, uid: str) -> Verdict | None:
    if customer != f"customer:{uid}":
        return _breaks(S_USER, f"the call is for {customer}, the customer is {uid}")
    return None


def _confirmed(said: Mapping[str, str]) -> Verdict | None:
    if said.get("airline:confirmed") != "yes":
        return _breaks(S_CONFIRM, "no explicit yes")
    return None


def _book(data: Mapping[str, Any], a: Mapping[str, Any], customer: str | None,
          said: Mapping[str, str], now: datetime) -> Verdict:
    user = data["users"][a["user_id"]]
    for v in (_owner(customer, a["user_id"]), _confirmed(said)):
        if v:
            return v
    pax = len(a["passengers"])
    if pax > 5 or pax < 1:
        return _breaks(S_FIVE, f"{pax} passengers")
    kinds: dict[str, set[str]] = {"certificate": set(), "credit_card": set(), "gift_card": set()}
    for p in a["payment_methods"]:
        kinds[user["payment_methods"][p["payment_id"]]["source"]].add(p["payment_id"])
        if p["amount"] < 0:
            return _breaks(S_PAY, "a negative amount")
    if len(kinds["certificate"]) > 1 or len(kinds["credit_card"]) > 1 \
            or len(kinds["gift_card"]) > 3:
        return _breaks(S_PAY, {k: len(v) for k, v in kinds.items()}.__repr__())
    legs = _connects(a["flights"], data)
    if not _trip_ok(legs, a["origin"], a["destination"], a["flight_type"]):
        return _breaks(S_TRIP, f"{legs} is not a {a['flight_type']} {a['origin']}-"
                               f"{a['destination']}")
    if _back_in_time(a["flights"]):
        return _breaks(S_TRIP, "a segment is dated before the one it follows")
    free = FREE[user["membership"]][a["cabin"]] * pax
    expected = max(0, a["total_baggages"] - free)
    if a["nonfree_baggages"] != expected:
        return _breaks(S_BAGS, f"{a['total_baggages']} bags, {free} free: {expected} to pay "
                               f"for, not {a['nonfree_baggages']}")
    return OK


def _reservation(data: Mapping[str, Any], a: Mapping[str, Any], customer: str | None
                 ) -> tuple[dict[str, Any], Verdict | None]:
    res = data["reservations"][a["reservation_id"]]
    v = _owner(customer, res["user_id"])
    if v is None and res.get("status") == "cancelled":
        v = _breaks(S_DONE)
    return res, v


def _cancel(data: Mapping[str, Any], a: Mapping[str, Any], customer: str | None,
            said: Mapping[str, str], now: datetime) -> Verdict:
    # "Before taking any actions that update the booking database ... obtain explicit user
    # confirmation (yes)": a cancellation updates it (asked after the policy's own refusals,
    # as the pack asks it: tests/security/test_603)
    v = _cancel_allowed(data, a, customer, said, now)
    return (_confirmed(said) or OK) if v is OK else v


def _cancel_allowed(data: Mapping[str, Any], a: Mapping[str, Any], customer: str | None,
                    said: Mapping[str, str], now: datetime) -> Verdict:
    res, v = _reservation(data, a, customer)
    if v:
        return v
    reason = said.get("airline:cancellationReason")
    if reason is None:
        return _breaks(S_REASON, "no reason")
    if any(_flown(data, s) for s in res["flights"]):
        return _breaks(S_FLOWN)
    if now - datetime.fromisoformat(res["created_at"]) <= timedelta(hours=24):
        return OK
    if any(_status(data, s).get("status") == "cancelled" for s in res["flights"]):
        return OK  # "or if the airline cancelled the flight" (whatever reason was given)
    if cabin_of(data, res) == "business":
        return OK  # "business flights can always be cancelled" (whatever reason was given)
    if res["insurance"] == "yes" and reason in ("health", "weather"):
        return OK
    if res["insurance"] == "yes" and reason == "other":
        # ambiguous: "other reasons" are the policy's third kind of reason; the benchmark's
        # reference actions cancel insured reservations for them (tasks 28, 31, 33, 34)
        return OK
    if reason == "airline_cancelled":
        return _breaks(S_CANCEL, "the customer says the airline cancelled; no flight is")
    return _breaks(S_CANCEL, f"{cabin_of(data, res)}, insurance {res['insurance']}, "
                             f"reason {reason}, booked {res['created_at']}")


def _flights(data: Mapping[str, Any], a: Mapping[str, Any], customer: str | None,
             said: Mapping[str, str], now: datetime) -> Verdict:
    res, v = _reservation(data, a, customer)
    if v:
        return v
    v = _confirmed(said)
    if v:
        return v
    old = [(s["flight_number"], s["date"]) for s in res["flights"]]
    new = [(s["flight_number"], s["date"]) for s in a["flights"]]
    flies = cabin_of(data, res)
    if flies == "basic_economy" and sorted(old) != sorted(new):
        return _breaks(S_BASIC, f"{old} -> {new}")
    if a["cabin"] != flies and a["cabin"] == res["cabin"] and set(old) & set(new):
        # the API keeps a flight (at the price of the cabin it flies) only when the cabin
        # named is the record's, which a change of cabin left behind: the kept flights would
        # fly one cabin, the new ones another
        return _breaks(S_CABIN, f"kept flights stay in {flies}, the others in {a['cabin']}")
    legs = _connects(a["flights"], data)
    if not _trip_ok(legs, res["origin"], res["destination"], res["flight_type"]) and not (
            # a record whose destination is its origin (a few of the benchmark's): the trip
            # recorded is "from X back to X" — the new legs connect and start and end at X
            res["origin"] == res["destination"] and legs and legs[0][0] == res["origin"]
            and legs[-1][1] == res["origin"]
            and all(x[1] == y[0] for x, y in itertools.pairwise(legs))):
        return _breaks(S_ROUTE, f"{legs} is not a {res['flight_type']} {res['origin']}-"
                                f"{res['destination']}")
    if _back_in_time(a["flights"]):
        return _breaks(S_ROUTE, "a segment is dated before the one it follows: flown in date "
                                "order the trip starts elsewhere")
    user = data["users"][res["user_id"]]
    source = user["payment_methods"][a["payment_id"]]["source"]
    if source not in ("gift_card", "credit_card"):
        return _breaks(S_CHANGE_PAY, source)
    dropped_flown = [s for s in res["flights"] if (s["flight_number"], s["date"]) not in new
                     and _flown(data, s)]
    if dropped_flown:
        # adjudicated (README, fourth audit): replacing a flown segment refunds a flight used
        # and books it again — the cancelling of a used segment the policy refuses
        return _breaks(S_FLOWN, "a flown segment would be replaced")
    return OK


def _bags(data: Mapping[str, Any], a: Mapping[str, Any], customer: str | None,
          said: Mapping[str, str], now: datetime) -> Verdict:
    res, v = _reservation(data, a, customer)
    if v:
        return v
    v = _confirmed(said)
    if v:
        return v
    if a["total_baggages"] < res["total_baggages"]:
        return _breaks(S_REMOVE, f"{res['total_baggages']} -> {a['total_baggages']}")
    user = data["users"][res["user_id"]]
    free = FREE[user["membership"]][cabin_of(data, res)] * len(res["passengers"])
    # the bags added are free while the allowance of the cabin flown has room for them, the
    # others are paid; bags held before stay as they were (paid ones are not refunded, free
    # ones are not charged — after a change to a smaller allowance, too: adjudicated, README)
    free_left = max(0, free - (res["total_baggages"] - res["nonfree_baggages"]))
    added = a["total_baggages"] - res["total_baggages"]
    expected = res["nonfree_baggages"] + max(0, added - free_left)
    if a["nonfree_baggages"] != expected:
        return _breaks(S_BAGS, f"{a['total_baggages']} bags, {free} free, "
                               f"{res['nonfree_baggages']} paid before: {expected} to pay for, "
                               f"not {a['nonfree_baggages']}")
    return OK


def _passengers(data: Mapping[str, Any], a: Mapping[str, Any], customer: str | None,
                said: Mapping[str, str], now: datetime) -> Verdict:
    _res, v = _reservation(data, a, customer)
    if v:
        return v
    return _confirmed(said) or OK


def _certificate(data: Mapping[str, Any], a: Mapping[str, Any], customer: str | None,
                 said: Mapping[str, str], now: datetime,
                 history: Sequence[Mapping[str, Any]] = ()) -> Verdict:
    # a certificate is a payment method added to the profile: it updates the database too,
    # and needs the customer's yes (tests/security/test_604), asked after the refusals
    v = _certificate_allowed(data, a, customer, said, now, history)
    return (_confirmed(said) or OK) if v is OK else v


def _certificate_allowed(data: Mapping[str, Any], a: Mapping[str, Any], customer: str | None,
                         said: Mapping[str, str], now: datetime,
                         history: Sequence[Mapping[str, Any]] = ()) -> Verdict:
    uid = a["user_id"]
    v = _owner(customer, uid)
    if v:
        return v
    ground = said.get("airline:compensationRequested")
    if ground not in ("cancelled_flight", "delayed_flight"):
        return _breaks(S_ASK, "no complaint asking for compensation")
    user = data["users"][uid]
    shows = (lambda s: _status(data, s).get("status") == "cancelled") \
        if ground == "cancelled_flight" else (lambda s: _was_delayed(data, s))
    unit = 100 if ground == "cancelled_flight" else 50
    # "after confirming the facts and changing or cancelling the reservation": a reservation
    # changed earlier in the conversation is judged on the flights it had before
    before = {h["args"]["reservation_id"]: h["before"] for h in history
              if h.get("before") is not None}
    concerned = []
    for rid in user["reservations"]:
        r = data["reservations"].get(rid)
        if r is None:
            continue
        was = before.get(rid, r)
        if any(shows(s) for s in r["flights"]) or any(shows(s) for s in was["flights"]):
            concerned.append(r)
    if not concerned:
        return _breaks(S_FACTS, f"no reservation of {uid} shows a {ground}")
    eligible = [r for r in concerned if user["membership"] in ("silver", "gold")
                or r["insurance"] == "yes" or cabin_of(data, r) == "business"]
    if not eligible:
        return _breaks(S_ELIGIBLE, "regular, no insurance, (basic) economy")
    amounts = [unit * len(r["passengers"]) for r in eligible]
    if a["amount"] not in amounts:
        return _breaks(S_AMOUNT, f"{a['amount']} not in {sorted(amounts)}")
    # "a certificate as a gesture": one for each reservation concerned
    sent = [h["args"]["amount"] for h in history if h["tool"] == "send_certificate"
            and h["args"].get("user_id") == uid]
    left = list(amounts)
    for amount in sent:
        if amount in left:
            left.remove(amount)
    if a["amount"] not in left:
        return _breaks(S_AMOUNT, f"a certificate of {a['amount']} was already sent for "
                                 "each reservation concerned")
    return OK
