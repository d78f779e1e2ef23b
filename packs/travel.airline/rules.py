"""The written policy (``wiki.md``), as checks decided at the moment of the call.

Each check reads the airline database as it is just before the call (no journal history
is needed: a snapshot of the benchmark's files is enough) and the customer's statements
carried by the proposal. It answers :class:`Finding` s: ``deny`` for a call the policy
forbids, ``clarify`` naming the customer fact that is missing. The pack README's rule table
lists every check with the sentence it comes from; the codes below are the table's.

What the API itself refuses is not a policy decision: :func:`findings` first runs the
benchmark's function on a view it never writes, with the arguments as the agent sent them;
when that answers ``Error: …`` (a missing argument, a string amount, a cabin ``Economy`` …)
no rule is applied and the call goes through to the API, whose error comes back unchanged.
A call the API would accept with an argument outside the benchmark's schema (a bag count
``"2"``, a cabin ``Economy`` on a booking with no flight) is refused by :func:`malformed`
before any rule: the rules compute only on the schema's types (fail closed).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from itertools import pairwise
from typing import Any

from cradle_kg.packs.sdk import Finding, Verdict

from . import api
from .db import EST, replaced_rows
from .models import SCHEMAS

CONFIRMED = "airline:confirmed"
REASON = "airline:cancellationReason"
COMPENSATION = "airline:compensationRequested"
REASONS = ("change_of_plan", "airline_cancelled", "health", "weather", "other")
COMPENSATIONS = ("cancelled_flight", "delayed_flight")
#: the reasons travel insurance covers ("health or weather"), and `other` (see `cancel`)
INSURED_REASONS = ("health", "weather", "other")

#: free checked bags per passenger, by the booking user's membership and the cabin
FREE_BAGS = {"regular": {"basic_economy": 0, "economy": 1, "business": 2},
             "silver": {"basic_economy": 1, "economy": 2, "business": 3},
             "gold": {"basic_economy": 2, "economy": 3, "business": 3}}
MAX_PASSENGERS = 5
#: the most bags a call may count (the integers of the benchmark's schema are bag counts)
MAX_COUNT = 1000
MAX_OF_KIND = {"certificate": 1, "credit_card": 1, "gift_card": 3}
#: the ids of the certificates the API issues (``send_certificate``)
ISSUED = frozenset(f"certificate_{n}" for n in api.CERTIFICATE_IDS)
#: a segment is used once its flight has taken off
FLOWN = ("flying", "landed")
#: a day as the benchmark's schema writes dates of birth and flights (``YYYY-MM-DD``)
_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True)
class Call:
    tool: str                       # the benchmark's name, e.g. ``cancel_reservation``
    args: Mapping[str, Any]         # the benchmark's keyword arguments
    on_behalf_of: str | None
    #: what the customer said (predicate → value): their statements, or the host's relaying them
    said: Mapping[str, str]
    #: the same predicates stated by someone else (never accepted as the customer's word)
    hearsay: Mapping[str, str]
    now: datetime


def _deny(code: str, message: str) -> Finding:
    return Finding(code=code, message=message, verdict=Verdict.DENY)


def _clarify(fact: str, message: str) -> Finding:
    return Finding(code="airline_fact_missing", message=message, verdict=Verdict.CLARIFY,
                   missing_facts=(fact,))


def _missing(call: Call, fact: str, what: str, customer: str) -> Finding:
    extra = ""
    if fact in call.hearsay:
        extra = (f"; `{fact}` was stated, but not by `{customer}` — only the customer's own "
                 "statement counts")
    return _clarify(fact, f"`{fact}` is missing: {what} (a statement whose source is "
                          f"`{customer}`, or the host application relaying it){extra}")


# --- facts of the database ---------------------------------------------------------------

def flight_status(v: api.View, number: str, date: str) -> str | None:
    data = v.flight(number)
    if data is None or date not in data["dates"]:
        return None
    return str(data["dates"][date]["status"])


def _left_late(v: api.View, number: str, date: str) -> bool:
    """The flight took off (``flying``/``landed``) later than scheduled, or landed later."""
    data = v.flight(number)
    day = data["dates"].get(date, {}) if data else {}
    if day.get("status") not in FLOWN:
        return False
    assert data is not None
    for actual, scheduled in (("actual_departure_time_est", "scheduled_departure_time_est"),
                              ("actual_arrival_time_est", "scheduled_arrival_time_est")):
        at, plan = day.get(actual), str(data.get(scheduled, ""))
        if not at or not plan:
            continue
        try:
            due = datetime.fromisoformat(f"{date}T{plan.split('+')[0]}") + timedelta(
                days=int(plan.split("+")[1]) if "+" in plan else 0)
            if datetime.fromisoformat(str(at)) > due:
                return True
        except ValueError:
            continue
    return False


def _booked_now(res: Mapping[str, Any], now: datetime) -> bool:
    """The reservation was booked at the domain clock — in this conversation: the API writes
    the clock into ``created_at`` (to the second) of what it books."""
    created = _created(res)
    return created is not None and created >= now.replace(microsecond=0)


def _priced_today(v: api.View, seg: Mapping[str, Any]) -> bool:
    """The segment is priced at today's price of its flight (what the API puts in a change)."""
    data = v.flight(str(seg["flight_number"]))
    day = data["dates"].get(seg["date"], {}) if data else {}
    return seg.get("price") in (day.get("prices") or {}).values()


def _changed(v: api.View, res: Mapping[str, Any], now: datetime) -> bool:
    """The API changed the reservation's flights since it was booked: a segment priced at
    today's price (what the API puts in a change) and, after the booking's payment, the
    difference it charged or refunded. A reservation booked at today's price and never
    changed shows its booking alone (every reservation of the benchmark's data is booked
    with one payment); one booked now is priced today but was never changed. A cancellation
    appends a negative copy of every payment: those refunds are not a change's difference.
    Nor is what a change of bags charged: $50 a non-free bag added, never a refund, never
    more in all than the reservation's non-free bags — later payments bags explain are no
    change (``tests/security/test_566``)."""
    paid = list(res.get("payment_history", []))
    if res.get("status") == "cancelled":
        paid = paid[: len(paid) // 2]
    later = [p.get("amount") for p in paid[1:]]
    bags = all(isinstance(x, int | float) and x > 0 and x % 50 == 0 for x in later) and (
        sum(later) <= 50 * int(res.get("nonfree_baggages", 0)))
    return (len(paid) > 1 and not bags and not _booked_now(res, now)
            and any(_priced_today(v, f) for f in res["flights"]))


def effective_cabin(v: api.View, res: Mapping[str, Any]) -> str:
    """The cabin the reservation flies. The API never updates ``cabin`` when a change of
    cabin goes through ``update_reservation_flights`` (only the prices show it), so when
    every segment's price is today's price of one other cabin and none of the recorded one,
    that cabin is the reservation's."""
    recorded = str(res.get("cabin", ""))
    common: set[str] | None = None
    for seg in res["flights"]:
        data = v.flight(seg["flight_number"])
        day = data["dates"].get(seg["date"], {}) if data else {}
        prices = day.get("prices") or {}
        match = {c for c, p in prices.items() if p == seg.get("price")}
        common = match if common is None else common & match
    if not common or recorded in common or len(common) != 1:
        return recorded
    return next(iter(common))


def _created(res: Mapping[str, Any]) -> datetime | None:
    try:
        at = datetime.fromisoformat(str(res["created_at"]))
    except (KeyError, ValueError):
        return None
    return at if at.tzinfo else at.replace(tzinfo=EST)


def _route_problem(v: api.View, res: Mapping[str, Any],
                   flights: list[Mapping[str, Any]]) -> str | None:
    """Why the new flights do not keep the reservation's origin, destination and trip type."""
    legs = []
    for f in flights:
        data = v.flight(f["flight_number"])
        if data is None:
            return None  # the API refuses an unknown flight itself
        legs.append((str(data["origin"]), str(data["destination"])))
    if not legs:
        return "the new itinerary has no flight"
    for (_, arrive), (depart, _) in pairwise(legs):
        if arrive != depart:
            return f"the flights do not connect (`{arrive}` then `{depart}`)"
    # the list is the order they are flown: a segment dated before the one it follows (a
    # return moved before its outbound) is flown first, and the trip starts elsewhere. The
    # day only — the benchmark's own data lists same-day returns before their outbound lands
    for before, after in pairwise(flights):
        if str(after["date"]) < str(before["date"]):
            return (f"`{after['flight_number']}` on {after['date']} would fly before "
                    f"`{before['flight_number']}` on {before['date']}, which it follows "
                    "(flown in date order the trip would start elsewhere)")
    origin, destination = str(res["origin"]), str(res["destination"])
    if legs[0][0] != origin:
        return f"the origin would change from `{origin}` to `{legs[0][0]}`"
    if res.get("flight_type") == "round_trip":
        if legs[-1][1] != origin:
            return (f"a round trip from `{origin}` would end in `{legs[-1][1]}` (the trip type "
                    "or the origin would change)")
        if destination != origin and destination not in [a for _, a in legs]:
            return f"the destination `{destination}` is no longer on the itinerary"
        return None
    if legs[-1][1] != destination:
        return f"the destination would change from `{destination}` to `{legs[-1][1]}`"
    return None


def _segments(flights: list[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return [(str(f["flight_number"]), str(f["date"])) for f in flights]


def _replaced(v: api.View, res: Mapping[str, Any]) -> bool:
    """A change of flights this home executed replaced segments of the reservation."""
    return bool(replaced_rows(v.conn, "reservation_id", str(res["reservation_id"])))


def segments_held(v: api.View, res: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The segments the reservation holds, then those it held before a change of flights
    this home executed took them off: the airline's record written in the change's own
    transaction (``replaced``, read by reservation, each row of a write the API accepted;
    the flights the reservation held, never ones a customer named). The API puts only an
    available flight in a reservation, so a cancelled one replaced was there from the
    start (``tests/security/test_581``)."""
    now = _segments(res["flights"])
    before = [(n, d) for _, n, d in replaced_rows(v.conn, "reservation_id",
                                                  str(res["reservation_id"]))]
    return now + [seg for seg in before if seg not in now]


# --- the arguments' types ------------------------------------------------------------------

def _type_problem(where: str, value: Any, schema: Mapping[str, Any]) -> str | None:
    """Why ``value`` is not of the benchmark's parameter ``schema`` (JSON Schema types as
    the benchmark's ``get_info`` declares them), or None."""
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(value, str):
            return f"`{where}` is {json.dumps(value)[:80]}, not a string"
        if "enum" in schema and value not in schema["enum"]:
            return (f"`{where}` is {json.dumps(value)[:80]}, not one of "
                    + ", ".join(f"`{x}`" for x in schema["enum"]))
        return None
    if kind in ("integer", "number"):
        number = isinstance(value, int | float) and not isinstance(value, bool) and (
            math.isfinite(value))
        if not number or (kind == "integer" and value != int(value)):
            what = "an integer" if kind == "integer" else "a number"
            return f"`{where}` is {json.dumps(value)[:80]}, not {what}"
        if kind == "integer" and not 0 <= value <= MAX_COUNT:
            return f"`{where}` is {value}: a count is between 0 and {MAX_COUNT}"
        return None
    if kind == "array":
        if not isinstance(value, list):
            return f"`{where}` is {json.dumps(value)[:80]}, not a list"
        for index, item in enumerate(value):
            problem = _type_problem(f"{where}[{index}]", item, schema["items"])
            if problem:
                return problem
        return None
    if kind == "object":
        if not isinstance(value, dict):
            return f"`{where}` is {json.dumps(value)[:80]}, not an object"
        for key, inner in schema["properties"].items():
            if key not in value:
                return f"`{where}` has no `{key}`"
            problem = _type_problem(f"{where}.{key}", value[key], inner)
            if problem:
                return problem
        return None
    return None


def malformed(tool: str, args: Mapping[str, Any]) -> Finding | None:
    """A call the API would accept with an argument outside the benchmark's own schema: the
    API stores it as sent (a bag count `"2"`, a booking's `flight_type` `One Way`, a
    passenger without a `dob`) and the rules, written for the schema's types, cannot decide
    it — refused, never computed on. Keys inside the list items beyond the schema's pass (the
    API keeps them, as the benchmark does)."""
    for key, schema in SCHEMAS[tool].items():
        problem = (f"`{key}` is missing" if key not in args
                   else _type_problem(key, args[key], schema))
        if problem:
            return _deny("airline_argument_invalid", f"{problem}: the call does not follow "
                         f"the benchmark's schema of `{tool}`; the API would accept and "
                         "store it as sent, so it is refused before any rule")
    return None


def _nonfree_over_total(a: Mapping[str, Any]) -> Finding | None:
    if a["nonfree_baggages"] > a["total_baggages"]:
        return _deny("airline_nonfree_over_total", f"{a['nonfree_baggages']} non-free bags "
                     f"of {a['total_baggages']}: `nonfree_baggages` is part of "
                     "`total_baggages`")
    return None


def _passenger_problem(passengers: list[Mapping[str, Any]], now: datetime) -> Finding | None:
    """"The agent needs to collect the first name, last name, and date of birth for each
    passenger": names that are not blank, and a date of birth that is one — the benchmark's
    schema writes it "in the format 'YYYY-MM-DD', such as '1990-01-01'" — not after today."""
    for index, p in enumerate(passengers):
        blank = [k for k in ("first_name", "last_name") if not str(p[k]).strip()]
        dob = str(p["dob"])
        try:
            born = date.fromisoformat(dob) if _ISO_DAY.fullmatch(dob) else None
        except ValueError:
            born = None
        if blank or born is None or born > now.date():
            what = (f"no {' and no '.join(k.replace('_', ' ') for k in blank)}" if blank else
                    f"date of birth `{dob}`, not a day up to today in the format YYYY-MM-DD")
            return _deny("airline_passenger_details", f"passenger {index + 1} has {what}: "
                         "the first name, last name and date of birth of each passenger are "
                         "collected")
    return None


# --- the checks per tool -----------------------------------------------------------------

def _owner_problem(call: Call, user_id: str) -> Finding | None:
    customer = f"customer:{user_id}"
    if not call.on_behalf_of:
        return _deny("airline_no_customer", "`on_behalf_of` is missing: a write is made for "
                     f"a customer, here `{customer}`")
    if call.on_behalf_of != customer:
        return _deny("airline_not_owner", f"`{call.on_behalf_of}` may not act on what belongs "
                     f"to `{customer}`")
    return None


def _confirmed(call: Call, customer: str, what: str) -> list[Finding]:
    said = call.said.get(CONFIRMED)
    if said is None:
        return [_missing(call, CONFIRMED, f"the customer's explicit yes to {what}", customer)]
    if said != "yes":
        return [_deny("airline_not_confirmed", f"the customer answered `{said}`, not `yes`, "
                                               f"to {what}")]
    return []


def _payments(v: api.View, user: Mapping[str, Any],
              methods: list[Mapping[str, Any]]) -> list[Finding]:
    # methods are counted once each, however many lines name them: one credit card on two
    # lines is one credit card (what its lines charge in all is checked below)
    kinds: dict[str, int] = {}
    for pid in dict.fromkeys(str(m["payment_id"]) for m in methods):
        pm = user["payment_methods"].get(pid, {})
        kinds[str(pm.get("source"))] = kinds.get(str(pm.get("source")), 0) + 1
    out = []
    for kind, most in MAX_OF_KIND.items():
        if kinds.get(kind, 0) > most:
            out.append(_deny("airline_payment_mix", f"{kinds[kind]} `{kind}` payments: a "
                             f"reservation may use at most {most}"))
    for kind in sorted(set(kinds) - set(MAX_OF_KIND)):
        out.append(_deny("airline_payment_kind", f"a `{kind}` payment method is not one the "
                         "policy allows (certificate, credit card, gift card)"))
    # a payment method pays its amount: a negative one would credit a gift card (the API
    # debits it by the amount); a certificate listed for 0 pays nothing yet is consumed ("the
    # remaining amount of a travel certificate is not refundable"). A credit card or gift
    # card listed for 0 is charged nothing and changes nothing: the policy does not forbid it
    for m in methods:
        source = user["payment_methods"].get(m["payment_id"], {}).get("source")
        if m["amount"] < 0 or (m["amount"] == 0 and source == "certificate"):
            out.append(_deny("airline_payment_amount", f"`{m['payment_id']}` is charged "
                             f"{m['amount']}: " + ("a certificate listed pays a positive "
                             "amount (the API consumes it whole)" if m["amount"] == 0 else
                             "each payment method listed pays a positive amount of the "
                             "price")))
    # a gift card or certificate pays at most what it holds; the API checks each line of
    # the list alone, so one listed twice could be overdrawn
    charged: dict[str, float] = {}
    for m in methods:
        charged[m["payment_id"]] = charged.get(m["payment_id"], 0) + m["amount"]
    for pid, total in charged.items():
        pm = user["payment_methods"].get(pid, {})
        if pm.get("source") in ("gift_card", "certificate") and total > pm.get("amount", 0):
            out.append(_deny("airline_payment_balance", f"`{pid}` holds {pm.get('amount')} "
                             f"and would be charged {total} in all"))
    return out


def book(v: api.View, call: Call) -> list[Finding]:
    a = call.args
    user = v.user(a["user_id"])
    assert user is not None  # the API refuses an unknown user first
    customer = f"customer:{a['user_id']}"
    out: list[Finding] = []
    owner = _owner_problem(call, a["user_id"]) or _nonfree_over_total(a)
    if owner:
        return [owner]
    npass = len(a["passengers"])
    if npass == 0:  # the API books it, priced at nothing
        out.append(_deny("airline_no_passenger", "no passenger: a reservation is booked for "
                         "the passengers listed"))
    if npass > MAX_PASSENGERS:
        out.append(_deny("airline_too_many_passengers", f"{npass} passengers: a reservation "
                         f"has at most {MAX_PASSENGERS}"))
    details = _passenger_problem(list(a["passengers"]), call.now)
    if details:
        out.append(details)
    out += _payments(v, user, list(a["payment_methods"]))
    membership = str(user.get("membership", "regular"))
    free = FREE_BAGS.get(membership, FREE_BAGS["regular"])[a["cabin"]] * npass
    due = max(0, a["total_baggages"] - free)
    if a["nonfree_baggages"] != due:
        out.append(_deny("airline_bag_allowance", f"{a['total_baggages']} bags with {free} free "
                         f"({membership}, `{a['cabin']}`, {npass} passenger(s)): "
                         f"{due} non-free, not {a['nonfree_baggages']}"))
    pseudo = {"origin": a["origin"], "destination": a["destination"],
              "flight_type": a["flight_type"]}
    route = _route_problem(v, pseudo, list(a["flights"]))
    if route:
        out.append(_deny("airline_itinerary", f"the flights do not make the `{a['flight_type']}` "
                         f"trip `{a['origin']}`→`{a['destination']}`: {route}"))
    if out:
        return out
    return _confirmed(call, customer, "this booking")


def _reservation(v: api.View, call: Call) -> tuple[dict[str, Any], str, Finding | None]:
    res = v.reservation(call.args["reservation_id"])
    assert res is not None  # the API refuses an unknown reservation first
    owner = _owner_problem(call, str(res["user_id"]))
    if owner is None and res.get("status") == "cancelled":
        owner = _deny("airline_already_cancelled", f"reservation `{res['reservation_id']}` is "
                      "cancelled")
    return res, f"customer:{res['user_id']}", owner


def cancel(v: api.View, call: Call) -> list[Finding]:
    res, customer, stop = _reservation(v, call)
    if stop:
        return [stop]
    rid = res["reservation_id"]
    statuses = {seg: flight_status(v, *seg) for seg in _segments(res["flights"])}
    used = [f"`{n}` on {d}" for (n, d), s in statuses.items() if s in FLOWN]
    if used:
        return [_deny("airline_segment_flown", f"reservation `{rid}` has flown segment(s) "
                      f"{', '.join(used)}: only a trip not flown can be cancelled (transfer to "
                      "a human agent)")]
    reason = call.said.get(REASON)
    if reason is None:
        return [_missing(call, REASON, "the reason for cancelling", customer)]
    if reason not in REASONS:
        return [_deny("airline_reason_unknown", f"`{reason}` is not a cancellation reason "
                      "(" + ", ".join(f"`{r}`" for r in REASONS) + ")")]
    confirmed = call.said.get(CONFIRMED)
    if confirmed is not None and confirmed != "yes":
        return [_deny("airline_not_confirmed", f"the customer answered `{confirmed}`, not "
                      "`yes`, to cancelling")]
    # "obtain explicit user confirmation (yes)" before "any actions that update the booking
    # database": cancelling is one (its status and refunds), whatever allows it
    # (``tests/security/test_603``)
    yes = _confirmed(call, customer, "cancelling this reservation")
    created = _created(res)
    if created is not None and call.now - created <= timedelta(hours=24):
        return yes
    cancelled = [f"`{n}` on {d}" for (n, d), s in statuses.items() if s == "cancelled"]
    if cancelled:
        return yes
    cabin = effective_cabin(v, res)
    if cabin == "business":
        return yes
    # the policy's reasons are "change of plan, airline cancelled flight, or other reasons":
    # health and weather (what insurance covers) are other reasons, so `other` is taken as
    # the customer's statement; a change of plan is not covered
    if res.get("insurance") == "yes" and reason in INSURED_REASONS:
        return yes
    if reason == "airline_cancelled":
        return [_deny("airline_reason_contradicted", f"the customer says the airline cancelled "
                      f"the flight, but no flight of reservation `{rid}` is cancelled in the "
                      f"database; booked {res.get('created_at')} (more than 24 hours ago), "
                      f"`{cabin}`, insurance `{res.get('insurance')}`: not cancellable")]
    why = ("travel insurance does not cover a change of plan"
           if res.get("insurance") == "yes" else "no travel insurance")
    return [_deny("airline_not_cancellable", f"reservation `{rid}` was booked "
                  f"{res.get('created_at')} (more than 24 hours ago), no flight of it is "
                  f"cancelled, it flies `{cabin}` and {why} (reason `{reason}`): not "
                  "cancellable")]


def update_flights(v: api.View, call: Call) -> list[Finding]:
    res, customer, stop = _reservation(v, call)
    if stop:
        return [stop]
    a = call.args
    rid = res["reservation_id"]
    out: list[Finding] = []
    old, new = _segments(res["flights"]), _segments(list(a["flights"]))
    changed = old != new
    cabin = effective_cabin(v, res)
    if changed and cabin == "basic_economy":
        out.append(_deny("airline_basic_economy", f"reservation `{rid}` is basic economy: its "
                         "flights cannot be modified (only its cabin, without changing flights)"))
    # the API keeps a flight (its old price) only when the call's cabin is the reservation's
    # `cabin` field, which a change of cabin left behind: the kept flights would stay in the
    # cabin flown while the new ones are priced in the field's — two cabins in one reservation
    recorded = str(res.get("cabin", ""))
    kept = [f"`{n}` on {d}" for n, d in new if (n, d) in old]
    if changed and kept and a["cabin"] == recorded != cabin:
        out.append(_deny("airline_cabin_mixed", f"reservation `{rid}` flies `{cabin}` (its "
                         f"`cabin` field still says `{recorded}`): {', '.join(kept)} would keep "
                         f"the `{cabin}` price and the new flights be priced in `{recorded}`; "
                         "cabin class must be the same across all the flights"))
    # the same stale field with the flights unchanged: the API keeps every flight at its
    # price in the cabin flown — the change of cabin asked (back to the field's) would not
    # happen, nothing refunded, yet the call would succeed ("Cabin changes require the user
    # to pay for the difference between their current cabin and the new cabin class")
    if not changed and a["cabin"] == recorded != cabin:
        out.append(_deny("airline_cabin_unchanged", f"reservation `{rid}` flies `{cabin}` (its "
                         f"`cabin` field still says `{recorded}`): the API would keep every "
                         f"flight at its `{cabin}` price, so this change to `{recorded}` would "
                         "change nothing and refund nothing (transfer to a human agent)"))
    # a segment already flown stays in the reservation: replacing it would refund a flight
    # used (the API subtracts its price) and book it again — "The agent can only cancel the
    # whole trip that is not flown. If any of the segments are already used, the agent cannot
    # help and transfer is needed." (the fourth audit)
    used = [f"`{n}` on {d}" for n, d in old
            if (n, d) not in new and flight_status(v, n, d) in FLOWN]
    if changed and used:
        out.append(_deny("airline_segment_flown", f"reservation `{rid}`: {', '.join(used)} "
                         "already flown would be replaced — a flown segment is kept as it is "
                         "(only the segments not flown can change; otherwise transfer to a "
                         "human agent)"))
    if changed:
        route = _route_problem(v, res, list(a["flights"]))
        if route:
            out.append(_deny("airline_route_changed", f"reservation `{rid}`: {route}; a "
                             "modification keeps the origin, destination and trip type"))
        owner = v.user(str(res["user_id"]))
        source = (owner or {}).get("payment_methods", {}).get(a["payment_id"], {}).get("source")
        if source not in ("gift_card", "credit_card"):
            out.append(_deny("airline_change_payment", f"`{a['payment_id']}` is a `{source}`: "
                             "a change of flights is paid or refunded with one gift card or "
                             "credit card"))
    if out:
        return out
    return _confirmed(call, customer, "this change of flights or cabin")


def update_baggages(v: api.View, call: Call) -> list[Finding]:
    res, customer, stop = _reservation(v, call)
    if stop:
        return [stop]
    a = call.args
    rid = res["reservation_id"]
    over = _nonfree_over_total(a)
    if over:
        return [over]
    old_total, old_nonfree = int(res["total_baggages"]), int(res["nonfree_baggages"])
    if a["total_baggages"] < old_total:
        return [_deny("airline_bag_removed", f"reservation `{rid}` has {old_total} checked bags: "
                      f"bags can be added, not removed (asked {a['total_baggages']})")]
    owner = v.user(str(res["user_id"])) or {}
    membership = str(owner.get("membership", "regular"))
    cabin = effective_cabin(v, res)
    free = FREE_BAGS.get(membership, FREE_BAGS["regular"]).get(cabin, 0) * len(res["passengers"])
    free_left = max(0, free - (old_total - old_nonfree))
    due = old_nonfree + max(0, a["total_baggages"] - old_total - free_left)
    if a["nonfree_baggages"] != due:
        return [_deny("airline_bag_allowance", f"reservation `{rid}`: {old_total} → "
                      f"{a['total_baggages']} bags, {free} free ({membership}, `{cabin}`, "
                      f"{len(res['passengers'])} passenger(s)), {old_nonfree} already paid: "
                      f"{due} non-free, not {a['nonfree_baggages']}")]
    return _confirmed(call, customer, "this change of bags")


def update_passengers(v: api.View, call: Call) -> list[Finding]:
    _, customer, stop = _reservation(v, call)
    if stop:
        return [stop]
    details = _passenger_problem(list(call.args["passengers"]), call.now)
    if details:
        return [details]
    return _confirmed(call, customer, "this change of passengers")


def certificate(v: api.View, call: Call) -> list[Finding]:
    a = call.args
    uid = str(a["user_id"])
    owner = _owner_problem(call, uid)
    if owner:
        return [owner]
    customer = f"customer:{uid}"
    asked = call.said.get(COMPENSATION)
    if asked is None:
        return [_missing(call, COMPENSATION, "the customer's complaint and explicit request "
                         "for compensation (certificates are not offered proactively)", customer)]
    if asked not in COMPENSATIONS:
        return [_deny("airline_compensation_unknown", f"`{asked}` is not a compensation ground "
                      "(`cancelled_flight`, `delayed_flight`)")]
    user = v.user(uid) or {}
    membership = str(user.get("membership", "regular"))
    status = "cancelled" if asked == "cancelled_flight" else "delayed"
    per = 100 if asked == "cancelled_flight" else 50
    every, affected = [], []
    for rid in user.get("reservations", []):
        res = v.reservation(str(rid))
        if res is None:
            continue
        every.append(res)
        # a cancelled or delayed flight the agent already moved the reservation off is
        # still the customer's flight ("complains about … flights in a reservation")
        if any(flight_status(v, *seg) == status for seg in segments_held(v, res)):
            affected.append(res)
    if asked == "cancelled_flight" and not affected:
        return [_deny("airline_compensation_contradicted", f"the customer complains of a "
                      f"cancelled flight, but no reservation of `{uid}` has a cancelled flight "
                      "in the database, nor had one before a change of flights")]
    # the complaint is about "flights in a reservation": the reservations that show the
    # cancelled or delayed flight. When none shows a flight `delayed` now, the facts can
    # still be confirmed on a flight that took off late, or on a reservation already
    # changed for the delay ("after … changing or cancelling the reservation": the API
    # prices the flight it put in at today's price); with neither, nothing confirms a delay.
    # A reservation booked now, or booked at the price its flights still have and never
    # changed, is priced at today's price too: neither is one changed for the delay. A
    # change this home executed is known by what it replaced (``replaced``): it confirms a
    # delay only by a replaced segment delayed or late, never by being a change — one off
    # a cancelled flight is not one made for a delay (``tests/security/test_590``)
    concerned = affected
    if asked == "delayed_flight" and not affected:
        concerned = [res for res in every if (
            _changed(v, res, call.now) and not _replaced(v, res)) or any(
            _left_late(v, *seg) for seg in segments_held(v, res))]
        if not concerned:
            return [_deny("airline_compensation_contradicted", f"the customer complains of a "
                          f"delayed flight, but no reservation of `{uid}` has a flight delayed, "
                          "a flight that left or landed late, or a flight changed today in the "
                          "database")]
    eligible = [res for res in concerned
                if membership in ("silver", "gold") or res.get("insurance") == "yes"
                or effective_cabin(v, res) == "business"]
    amounts = [per * len(res["passengers"]) for res in eligible]
    if not eligible:
        which = ", ".join(f"`{res['reservation_id']}`" for res in affected)
        where = f" ({which}, with the {status} flight)" if which else ""
        return [_deny("airline_compensation_ineligible", f"`{uid}` is a `{membership}` member "
                      f"and no reservation concerned{where} has travel insurance or flies "
                      "business: no compensation")]
    if a["amount"] not in amounts:
        allowed = ", ".join(f"`{x}`" for x in sorted(set(amounts)))
        return [_deny("airline_compensation_amount", f"a certificate for a {status} flight is "
                      f"${per} times the passengers of the reservation: {allowed}, not "
                      f"`{a['amount']}`")]
    # "the agent can offer a certificate": one per reservation concerned. A certificate the
    # API already issued (its own ids) for one of these amounts used up that reservation's
    # gesture; one of another amount was for something else
    left = list(amounts)
    for pid, pm in user.get("payment_methods", {}).items():
        if pid in ISSUED and pm.get("amount") in left:
            left.remove(pm["amount"])
    # one already spent whole on a booking is gone from the profile (the API deletes a
    # certificate used) but the booking's payment history names it with its amount
    for res in every:
        for pay in res.get("payment_history", []):
            if pay.get("payment_id") in ISSUED and pay.get("amount") in left:
                left.remove(pay["amount"])
    if a["amount"] not in left:
        return [_deny("airline_compensation_repeated", f"`{uid}` already holds the "
                      f"certificate(s) for this {status} flight complaint ({len(amounts)} "
                      f"reservation(s) concerned, of ${', $'.join(str(x) for x in amounts)}): "
                      "a gesture is offered once")]
    # the certificate is added to the customer's profile: a write on the booking database,
    # made after the customer's explicit yes as every other (``tests/security/test_604``)
    return _confirmed(call, customer, "this certificate")


RULES: dict[str, Callable[[api.View, Call], list[Finding]]] = {
    "book_reservation": book, "cancel_reservation": cancel,
    "update_reservation_flights": update_flights,
    "update_reservation_baggages": update_baggages,
    "update_reservation_passengers": update_passengers, "send_certificate": certificate}


def findings(v: api.View, call: Call) -> list[Finding]:
    """The policy's answer for one write; [] when the API itself would refuse it (the
    arguments as sent: the API's function answers what the benchmark's answers)."""
    fn = api.WRITES[call.tool]
    answer = fn(v, **dict(call.args))  # on a view that is never flushed
    if answer.startswith("Error:"):
        return []
    bad = malformed(call.tool, call.args)
    if bad:
        return [bad]
    fresh = v.fresh()  # the API's dry run changed the cached documents
    return RULES[call.tool](fresh, call)
