"""The 14 tools of the benchmark, their contracts, and the verifiers of the six writes.

Tool ids are ``airline.<benchmark name>``; the arguments are the benchmark's. Targets:
``reservation:<id>`` for a call on a reservation, ``customer:<user_id>`` for a booking, a
certificate and the customer read, fixed names for the rest. A write records what it
answered under its idempotency key in the same transaction as its effect, so a repeated
key returns the recorded answer (the lookup) and nothing happens twice. The writes are
``external_write``: they move money (charges, refunds, certificates) in the airline's
system; none can be undone by the API itself.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cradle_kg.packs.sdk import (
    FactCheck,
    IdempotencyClass,
    PackContext,
    SideEffectClass,
    ToolCall,
    ToolRefused,
    VerifierReport,
    VerifyRequest,
    check,
    read_back,
    report,
    tool,
    verifier,
)

from . import api, rules
from . import postconditions as post
from .db import SOURCE, AirlineDB, Reader
from .models import (
    ApiAnswer,
    BookReservation,
    Expression,
    NoArguments,
    ReservationId,
    Route,
    SendCertificate,
    Summary,
    Thought,
    UpdateBaggages,
    UpdateFlights,
    UpdatePassengers,
    UserId,
)


def _answer(text: str) -> ApiAnswer:
    error = text if text.startswith("Error:") else None
    return ApiAnswer(ok=error is None, output=text, error=error)


def created_at(conn: Any) -> str:
    """The domain clock as the benchmark writes ``created_at`` (EST, no offset)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'now'").fetchone()
    now = datetime.fromisoformat(str(row[0])) if row else None
    return created_at_of(now) if now else "2024-05-15T15:00:00"


def created_at_of(now: datetime) -> str:
    """:func:`created_at` of a domain clock already read (``Reader.now``: the database's,
    or ``DEFAULT_NOW``, which this writes as the default above)."""
    return now.strftime("%Y-%m-%dT%H:%M:%S")


def _log(conn: Any, key: str, name: str, args: dict[str, Any], answer: str,
         before: int, held: list[tuple[str, str]]) -> None:
    """The airline's own record of what changed: the reservation, and the payments, refunds
    and certificates the call added (what the named queries and the projection read); for
    a change of flights, the segments of ``held`` (the reservation's before the call) it
    took off — the flights the reservation held, which its document no longer shows
    (the cancelled-flight gesture reads them, ``tests/security/test_581``)."""
    rows: list[tuple[str, str | None, str | None, str | None, float | None]] = []
    if name == "send_certificate":
        rows.append(("certificate", None, args["user_id"], answer.split()[1],
                     float(args["amount"])))
    else:
        res = json.loads(answer)
        rows.append(("reservation", res["reservation_id"], res["user_id"], None, None))
        for p in res["payment_history"][before:]:
            rows.append(("refund" if p["amount"] < 0 else "payment", res["reservation_id"],
                         res["user_id"], p["payment_id"], float(p["amount"])))
        if name == "update_reservation_flights":
            now = set(_segments(res))
            conn.executemany("INSERT INTO replaced VALUES (?,?,?,?)", [
                (res["reservation_id"], n, d, key) for n, d in held if (n, d) not in now])
    conn.executemany("INSERT INTO changes(idempotency_key, tool, kind, reservation_id, user_id, "
                     "payment_id, amount) VALUES (?,?,?,?,?,?,?)",
                     [(key, name, *r) for r in rows])


#: gate 1's reading of each write it let through — the call as the rules saw it, with the
#: customer's statements — by (home, run, agent, tool, arguments), newest last: the tool
#: asks the rules again with the newest in its own transaction (:func:`write`). A
#: process's own (gate 1 and the tool run in the process that submits). Bounded: a key's
#: distinct readings only (an equal one, the clock aside, is moved to the end), at most
#: :data:`READINGS_PER_KEY` of them, and :data:`_DECIDED_LIMIT` keys, the oldest dropped.
#: A reading is not taken off when its write is applied: a call gate 1 allowed that a
#: later check stopped is never run, and its reading would stay whatever (``test_544``);
#: a key gate 1 just allowed a call under is never emptied by another request of its own
_DECIDED: OrderedDict[tuple[str, ...], list[rules.Call]] = OrderedDict()
_DECIDED_LOCK = threading.Lock()
_DECIDED_LIMIT = 4096
READINGS_PER_KEY = 8


def decided_key(home: Path, run_id: str, agent: str, name: str,
                args: dict[str, Any]) -> tuple[str, ...]:
    return (str(home), run_id, agent, name, json.dumps(args, sort_keys=True, default=str))


def remember_decided(key: tuple[str, ...], call: rules.Call) -> None:
    """Gate 1 allowed ``call``: keep it for the tool's second look."""
    with _DECIDED_LOCK:
        calls = [c for c in _DECIDED.get(key, []) if replace(c, now=call.now) != call]
        calls.append(call)
        _DECIDED[key] = calls[-READINGS_PER_KEY:]
        _DECIDED.move_to_end(key)
        while len(_DECIDED) > _DECIDED_LIMIT:
            _DECIDED.popitem(last=False)


def _decided(key: tuple[str, ...]) -> rules.Call | None:
    """Gate 1's newest reading for ``key`` (a refused write is retried by the runtime, and
    asks with it again)."""
    with _DECIDED_LOCK:
        calls = _DECIDED.get(key)
        return calls[-1] if calls else None


def _refused_now(ctx: PackContext, tool_call: ToolCall, name: str, args: dict[str, Any],
                 conn: Any) -> str | None:
    """Why the policy refuses this write on the database as the write's transaction sees
    it — the same rules gate 1 asked (:func:`rules.findings`, with the statements it read),
    asked again where no other write can land in between: two calls racing both passed
    gate 1 on the database before either wrote (two certificates for one complaint, a
    change written to a reservation just cancelled: ``tests/security/test_530``). None
    when it allows, or when this process did not decide the call (nothing to ask with)."""
    decided = _decided(decided_key(ctx.home, tool_call.run_id, tool_call.actor, name, args))
    if decided is None:
        return None
    now = Reader(conn).now()
    found = rules.findings(api.View(conn, created_at_of(now)), replace(decided, now=now))
    if not found:
        return None
    return ("the policy refuses this call on the database as it is now (another call "
            "changed it after this one was allowed): " + "; ".join(
                f"{f.code}: {f.message}" for f in found))


def write(ctx: PackContext, call: ToolCall, name: str) -> ApiAnswer:
    """One call of the benchmark's API in one transaction, recorded under its key; the
    policy asked again in that transaction first (:func:`_refused_now`)."""
    db = AirlineDB.of(ctx)
    key = call.idempotency_key
    args = call.arguments.model_dump(mode="json")
    with db.writing() as conn:
        done = conn.execute("SELECT output FROM applied WHERE idempotency_key = ?",
                            (key,)).fetchone()
        if done is not None:
            return _answer(str(done[0]))
        refused = _refused_now(ctx, call, name, args, conn)
        if refused is not None:
            # nothing written (the transaction is rolled back): a typed refusal, final for
            # the key, no human task (tests/security/test_557)
            raise ToolRefused("policy_refuses_now", refused)
        view = api.View(conn, created_at(conn))
        rid = args.get("reservation_id")  # as the agent sent it: the API answers a bad one
        res = view.reservation(rid) if isinstance(rid, str) else None
        before = len(res["payment_history"]) if res else 0
        held = _segments(res)  # read before the API replaces the list
        text = api.WRITES[name](view, **args)
        answer = _answer(text)
        if answer.ok:
            view.flush()
            _log(conn, key, name, args, text, before, held)
        conn.execute("INSERT INTO applied VALUES (?,?,?,?)", (key, name, int(answer.ok), text))
    return answer


def read(ctx: PackContext, call: ToolCall, name: str) -> ApiAnswer:
    db = AirlineDB.of(ctx)
    with db.reading() as conn:
        return _answer(api.READS[name](api.View(conn, ""), **call.arguments.model_dump(
            mode="json")))


def lookup(ctx: PackContext, call: ToolCall) -> ApiAnswer | None:
    found = AirlineDB.of(ctx).applied(call.idempotency_key)
    return None if found is None else _answer(found[1])


WRITE: dict[str, Any] = dict(output_model=ApiAnswer,
                             side_effect_class=SideEffectClass.EXTERNAL_WRITE,
                             idempotency=IdempotencyClass.KEYED, lookup=lookup)
#: what a write may touch (gate 2 checks the verifier's observed changes against it): a
#: change of a reservation touches that reservation and its owner's profile (payments); a
#: booking creates a reservation of that customer; a certificate lands in one profile
ON_RESERVATION = ("reservation:{reservation_id}", "customer:*")
READ: dict[str, Any] = dict(output_model=ApiAnswer, side_effect_class=SideEffectClass.READ_ONLY,
                            idempotency=IdempotencyClass.NATURAL)


def _of(kind: str, key: str) -> Callable[[BaseModel], str]:
    """The target a call names: ``<kind>:<id>`` for the id argument as sent, escaped so it
    matches only itself. An id that is missing or not a string names no reservation or
    customer of the database (its ids are strings): the API answers the call with its own
    error whatever the target, so any ``<kind>:…`` target is accepted for it."""
    def target(arguments: BaseModel) -> str:
        value = arguments.model_dump(mode="json").get(key)
        if not isinstance(value, str):
            return f"{kind}:*"
        return f"{kind}:" + "".join(f"[{ch}]" if ch in "*?[]" else ch for ch in value)
    return target


ON_CUSTOMER = _of("customer", "user_id")
ON_RESERVATION_ID = _of("reservation", "reservation_id")


def _writer(name: str) -> Callable[[PackContext, ToolCall], ApiAnswer]:
    def body(ctx: PackContext, call: ToolCall) -> ApiAnswer:
        return write(ctx, call, name)
    return body


def _reader(name: str) -> Callable[[PackContext, ToolCall], ApiAnswer]:
    def body(ctx: PackContext, call: ToolCall) -> ApiAnswer:
        return read(ctx, call, name)
    return body


book_reservation = tool(
    "airline.book_reservation", input_model=BookReservation, verifier="airline.booked",
    postconditions=(post.BOOKED,),
    target_from=ON_CUSTOMER, description="Book a reservation.",
    blast_radius=("reservation:*", "customer:{user_id}"), **WRITE,
)(_writer("book_reservation"))
cancel_reservation = tool(
    "airline.cancel_reservation", input_model=ReservationId, verifier="airline.cancelled",
    postconditions=(post.CANCELLED,),
    target_from=ON_RESERVATION_ID, description="Cancel the whole reservation.",
    blast_radius=ON_RESERVATION, **WRITE)(_writer("cancel_reservation"))
update_reservation_flights = tool(
    "airline.update_reservation_flights", input_model=UpdateFlights,
    verifier="airline.flights-updated",
    postconditions=(post.FLIGHTS_UPDATED,), target_from=ON_RESERVATION_ID,
    description="Update the flight and cabin information of a reservation.",
    blast_radius=ON_RESERVATION, **WRITE,
)(_writer("update_reservation_flights"))
update_reservation_baggages = tool(
    "airline.update_reservation_baggages", input_model=UpdateBaggages,
    verifier="airline.baggages-updated",
    postconditions=(post.BAGGAGES_UPDATED,), target_from=ON_RESERVATION_ID,
    description="Update the baggage information of a reservation.",
    blast_radius=ON_RESERVATION, **WRITE,
)(_writer("update_reservation_baggages"))
update_reservation_passengers = tool(
    "airline.update_reservation_passengers", input_model=UpdatePassengers,
    verifier="airline.passengers-updated",
    postconditions=(post.PASSENGERS_UPDATED,), target_from=ON_RESERVATION_ID,
    description="Update the passenger information of a reservation.",
    blast_radius=ON_RESERVATION, **WRITE,
)(_writer("update_reservation_passengers"))
send_certificate = tool(
    "airline.send_certificate", input_model=SendCertificate, verifier="airline.certificate-sent",
    postconditions=(post.CERTIFICATE_SENT,),
    target_from=ON_CUSTOMER, description="Send a certificate to a user.",
    blast_radius=("customer:{user_id}",), **WRITE,
)(_writer("send_certificate"))

get_user_details = tool("airline.get_user_details", input_model=UserId,
                        target_from=ON_CUSTOMER, description="Get the details of a "
                        "user, including their reservations.", **READ)(
    _reader("get_user_details"))
get_reservation_details = tool("airline.get_reservation_details", input_model=ReservationId,
                               target_from=ON_RESERVATION_ID,
                               description="Get the details of a reservation.", **READ)(
    _reader("get_reservation_details"))
search_direct_flight = tool("airline.search_direct_flight", input_model=Route,
                            target_from="airline:flights",
                            description="Search direct flights between two cities on a date.",
                            **READ)(_reader("search_direct_flight"))
search_onestop_flight = tool("airline.search_onestop_flight", input_model=Route,
                             target_from="airline:flights", description="Search one-stop "
                             "flights between two cities on a date.", **READ)(
    _reader("search_onestop_flight"))
list_all_airports = tool("airline.list_all_airports", input_model=NoArguments,
                         target_from="airline:airports", description="List all airports and "
                         "their cities.", **READ)(_reader("list_all_airports"))
calculate = tool("airline.calculate", input_model=Expression, target_from="airline:calculator",
                 description="Calculate the result of a mathematical expression.", **READ)(
    _reader("calculate"))
# it changes nothing in the airline's database: the hand-off is the conversation's
transfer_to_human_agents = tool(
    "airline.transfer_to_human_agents", input_model=Summary, target_from="airline:human-agents",
    description="Transfer the user to a human agent, with a summary of the issue.", **READ,
)(_reader("transfer_to_human_agents"))
# the benchmark's agent also has a scratchpad: it reads and changes nothing
think = tool("airline.think", input_model=Thought, target_from="airline:notes",
             description="Use the tool to think about something. It will not obtain new "
             "information or change the database, but just append the thought to the log.",
             **READ)(_reader("think"))


# --- verifiers: the database read back through a read-only connection of their own ---------

#: what a verifier expects to read back: (the database, the call's arguments, the airline's
#: change log rows of the call's key) → (it holds, the detail, the evidence)
Expect = Callable[[Reader, dict[str, Any], list[dict[str, Any]]],
                  tuple[bool, str, dict[str, Any]]]


def _state(ctx: PackContext, req: VerifyRequest,
           expect: Expect,
           ) -> VerifierReport:
    read_at = ctx.clock()
    with AirlineDB.of(ctx).reading() as conn:
        return _read_state(Reader(conn), req, expect, read_at)


def _read_state(db: Reader, req: VerifyRequest,
                expect: Expect,
                read_at: datetime) -> VerifierReport:
    applied = db.applied(req.action.idempotency_key)
    if applied is None:
        return report(read_back(False, False, exists_detail="the airline has no record of this "
                                "call"), read_at=read_at, source=SOURCE, evidence={})
    ok, output = applied
    if not ok:
        return report([*read_back(False, False, exists_detail=f"the API refused the call: "
                                  f"{output}"), check("api_accepted", False, output)],
                      read_at=read_at, source=SOURCE, evidence={"api_error": output})
    args = req.arguments.model_dump(mode="json")
    changes = db.changes(req.action.idempotency_key)
    matches, detail, evidence = expect(db, args, changes)
    # a change of flights: the segments the airline recorded it took off the reservation
    # (what the cancelled-flight gesture reads), in the journal with the rest
    replaced = db.replaced_by(req.action.idempotency_key)
    if replaced:
        evidence = {**evidence, "replaced": replaced}
    return report(read_back(True, matches, state_detail=detail), read_at=read_at,
                  source=SOURCE, evidence={**evidence, "changes": changes},
                  changed=changed_resources(changes), facts=statement_checks(db, req, args))


#: the customer statements the airline's own records can settle, and the flight status
#: each one asserts of a flight of the customer's reservations
_SETTLED_BY_FLIGHTS = {(rules.REASON, "airline_cancelled"): "cancelled",
                       (rules.COMPENSATION, "cancelled_flight"): "cancelled",
                       (rules.COMPENSATION, "delayed_flight"): "delayed"}


def statement_checks(db: Reader, req: VerifyRequest, args: dict[str, Any]) -> list[FactCheck]:
    """The customer's statements the database can confirm: "the airline
    cancelled my flight", "my flight was delayed" are read against the flights of the
    reservation (or, for a compensation, of the customer's reservations). What only the
    customer knows (a yes, health, weather, a change of plan) stays their statement: a
    candidate fact, visible as such, never Verified. ``args``: the call's arguments as
    JSON (the caller's dump of ``req.arguments``)."""
    view = api.View(db.conn, "")
    out: list[FactCheck] = []
    for index, fact in enumerate(req.facts):
        status = _SETTLED_BY_FLIGHTS.get((fact.predicate, str(fact.object)))
        if status is None:
            continue
        if "reservation_id" in args:
            rids = [str(args["reservation_id"])]
        else:
            rids = [str(r) for r in (view.user(str(args.get("user_id", ""))) or {}).get(
                "reservations", [])]
        hits = [f"{rid} {n} {d}" for rid in rids
                for n, d in _held(view, view.reservation(rid), status)
                if rules.flight_status(view, n, d) == status]
        # INVARIANT: a statement gate 1 let through is never contradicted here — gate 1
        # refuses the ones the database contradicts (saying so); a delayed flight may be gone
        # from a reservation changed since, so "not found" leaves the statement a candidate
        if hits:
            out.append(FactCheck(fact=index, status="verified",
                                 detail=f"flights {status}: " + ", ".join(hits)))
    return out


def _held(view: api.View, res: dict[str, Any] | None, status: str) -> list[tuple[str, str]]:
    """The segments a statement of a ``status`` flight is read against: a cancelled one
    also among those an executed change took off the reservation (as the rules read it)."""
    if res is None or status != "cancelled":
        return _segments(res)
    return rules.segments_held(view, res)


def _segments(res: dict[str, Any] | None) -> list[tuple[str, str]]:
    return [] if res is None else [(str(f["flight_number"]), str(f["date"]))
                                   for f in res.get("flights", [])]


def changed_resources(changes: list[dict[str, Any]]) -> list[str]:
    """What the airline's change log (written in the effect's own transaction) says was
    touched: the reservation, and the customer whose profile a payment, refund or
    certificate moved (gift card and certificate balances live in the profile)."""
    out: list[str] = []
    for change in changes:
        if change["kind"] == "reservation":
            out.append(f"reservation:{change['reservation_id']}")
        elif change["user_id"]:
            out.append(f"customer:{change['user_id']}")
    return sorted(set(out))


def _same_flights(res: dict[str, Any], flights: list[dict[str, Any]]) -> bool:
    return [(f["flight_number"], f["date"]) for f in res["flights"]] == [
        (f["flight_number"], f["date"]) for f in flights]


def _reservation_check(check_fn: Callable[[dict[str, Any], dict[str, Any]], bool], what: str,
                       ) -> Expect:
    def expect(db: Reader, args: dict[str, Any],
               changes: list[dict[str, Any]]) -> tuple[bool, str, dict[str, Any]]:
        res = db.reservation(args["reservation_id"])
        if res is None:
            return False, f"reservation `{args['reservation_id']}` is not in the database", {}
        good = check_fn(res, args)
        return good, (what if good else f"reservation `{res['reservation_id']}` does not show "
                      + what), read_back_reservation(db, res)
    return expect


def read_back_reservation(db: Reader, res: dict[str, Any]) -> dict[str, Any]:
    """The evidence of a reservation read back: its document, and the cabin it flies
    (``cabin_flown``). The document's ``cabin`` is what the API wrote at booking and never
    updates on a change of cabin; the segments' prices say the cabin flown (the rules'
    reading, :func:`rules.effective_cabin`), and the run graph projects that one."""
    return {"reservation": res,
            "cabin_flown": rules.effective_cabin(api.View(db.conn, ""), res)}


@verifier("airline.cancelled")
def cancelled(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    return _state(ctx, req, _reservation_check(
        lambda r, a: r.get("status") == "cancelled"
        and sum(p["amount"] for p in r["payment_history"]) == 0,
        "status `cancelled`, every payment refunded"))


@verifier("airline.flights-updated")
def flights_updated(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    return _state(ctx, req, _reservation_check(
        lambda r, a: _same_flights(r, a["flights"]), "the new flights"))


@verifier("airline.baggages-updated")
def baggages_updated(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    return _state(ctx, req, _reservation_check(
        lambda r, a: (r["total_baggages"], r["nonfree_baggages"]) == (
            a["total_baggages"], a["nonfree_baggages"]), "the new bag counts"))


@verifier("airline.passengers-updated")
def passengers_updated(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    return _state(ctx, req, _reservation_check(
        lambda r, a: r["passengers"] == a["passengers"], "the new passengers"))


def _booked(db: Reader, args: dict[str, Any],
            changes: list[dict[str, Any]]) -> tuple[bool, str, dict[str, Any]]:
    """The reservation this call made — the one the airline's change log records for its
    key, written in the booking's own transaction — read back and checked. Not the
    customer's newest reservation with these flights: two identical bookings both written
    before either was verified read back the same one (``tests/security/test_531``)."""
    made = [str(c["reservation_id"]) for c in changes if c["kind"] == "reservation"]
    user = db.user(args["user_id"]) or {"reservations": []}
    for rid in made:
        res = db.reservation(rid)
        if res and rid in user["reservations"] and _same_flights(
                res, args["flights"]) and res["passengers"] == args[
                "passengers"] and res["cabin"] == args["cabin"]:
            return True, f"reservation `{rid}` of `{args['user_id']}`", \
                read_back_reservation(db, res)
    return False, (f"the reservation this call made ({', '.join(made) or 'none recorded'}) is "
                   f"not a reservation of `{args['user_id']}` with these flights and "
                   "passengers"), {}


@verifier("airline.booked")
def booked(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    return _state(ctx, req, _booked)


def _certificate(db: Reader, args: dict[str, Any],
                 changes: list[dict[str, Any]]) -> tuple[bool, str, dict[str, Any]]:
    user = db.user(args["user_id"]) or {"payment_methods": {}}
    found = [pid for pid, m in user["payment_methods"].items()
             if m.get("source") == "certificate" and pid.startswith("certificate_32213")
             and m.get("amount") == args["amount"]]
    return bool(found), (f"certificate `{found[-1]}` of {args['amount']}" if found else
                         f"no certificate of {args['amount']} in the profile"), {
        "certificates": found}


@verifier("airline.certificate-sent")
def certificate_sent(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    return _state(ctx, req, _certificate)


def args_of(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
