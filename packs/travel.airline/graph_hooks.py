"""travel.airline's records in the run graph, through the SDK's projection hook.

Pure functions of one journal event. They read ``verification.recorded`` of an airline
write: the verifier's evidence, i.e. what the verifier read back from the database through
its own connection — the changed reservation and the call's rows of the airline's
``changes`` log — never the tool's claim. Each record links to the runtime's action that
made it (``airline:changedBy``):

- the reservation (``airline:Reservation``: id, customer, trip type, insurance, status —
  what no write changes but a cancellation's status) and its customer
  (``airline:Customer``);
- the reservation as the write left it (``airline:ReservationState``, one per write,
  ``airline:stateOf`` the reservation): the cabin it flies, as the verifier read it from
  the segments' prices (``cabin_flown``). The reservation's ``cabin`` field is not it: the
  API never updates it on a change of cabin, and a reservation's cabin changes from write
  to write, so it is said of each write's state, never of the reservation
  (``tests/security/test_528``);
- each payment and refund the call added (``airline:Payment`` / ``airline:Refund``:
  amount, the payment method, the reservation);
- a certificate sent (``airline:Certificate``: amount, the customer).

An API refusal changed nothing: its evidence has no changes, so nothing is projected.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote

from cradle_kg.packs.sdk import AuditEvent, Triple, core_node, iri, literal, projection

AIRLINE = "https://w3id.org/cradle/pack/airline#"
BASE = "https://w3id.org/cradle/pack/airline/id/"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
XSD_DECIMAL = "http://www.w3.org/2001/XMLSchema#decimal"
CABINS = {"basic_economy": "BasicEconomy", "economy": "Economy", "business": "Business"}


def ax(term: str) -> str:
    return iri(AIRLINE + term)


def node(kind: str, *keys: str) -> str:
    return iri(BASE + kind + "/" + "/".join(quote(k, safe="") for k in keys))


def _a(s: str, cls: str) -> Triple:
    return (s, iri(RDF_TYPE), ax(cls))


def _amount(value: Any) -> str:
    return literal(format(float(value), "f").rstrip("0").rstrip(".") or "0", XSD_DECIMAL)


def customer(uid: str) -> Iterator[Triple]:
    c = node("customer", uid)
    yield _a(c, "Customer")
    yield (c, ax("userId"), literal(uid))


def method(uid: str, pid: str) -> Iterator[Triple]:
    m = node("payment-method", uid, pid)
    yield _a(m, "PaymentMethod")  # typed whole: the shapes see no subclass inference
    if pid.startswith("certificate_"):
        yield _a(m, "Certificate")
    yield (m, ax("paymentId"), literal(pid))


def reservation_ref(rid: str, uid: str) -> Iterator[Triple]:
    """What every mention of a reservation carries (the shapes want it whole)."""
    r = node("reservation", rid)
    yield _a(r, "Reservation")
    yield (r, ax("reservationId"), literal(rid))
    yield (r, ax("bookedBy"), node("customer", uid))
    yield from customer(uid)


def reservation(doc: dict[str, Any], action: str, action_id: str,
                cabin_flown: Any) -> Iterator[Triple]:
    rid, uid = str(doc.get("reservation_id", "")), str(doc.get("user_id", ""))
    if not rid or not uid:
        return
    r = node("reservation", rid)
    yield from reservation_ref(rid, uid)
    yield (r, ax("resource"), core_node("resource", f"reservation:{rid}"))
    yield (r, ax("changedBy"), action)
    # the cabin flown, on this write's state: evidence recorded before it was read (no
    # `cabin_flown`) says no cabin — its `cabin` field may be one the reservation left
    if isinstance(cabin_flown, str) and cabin_flown in CABINS:
        state = node("reservation-state", rid, action_id)
        cabin = ax(CABINS[cabin_flown])
        yield _a(state, "ReservationState")
        yield (state, ax("stateOf"), r)
        yield (state, ax("changedBy"), action)
        yield (state, ax("cabin"), cabin)
        yield (cabin, iri(RDF_TYPE), ax("Cabin"))
    if doc.get("flight_type") in ("one_way", "round_trip"):
        yield (r, ax("tripType"), literal(str(doc["flight_type"])))
    if doc.get("insurance") in ("yes", "no"):
        yield (r, ax("insurance"), literal(doc["insurance"] == "yes"))
    if doc.get("status"):
        yield (r, ax("status"), literal(str(doc["status"])))


@projection("airline.changes", kinds=("verification.recorded",))
def changes(ev: AuditEvent) -> Iterable[Triple]:
    verification = ev.payload.get("verification") or {}
    evidence = ev.payload.get("evidence")
    if not str(verification.get("verifier_id", "")).startswith("airline.") or not isinstance(
            evidence, dict):
        return
    action_id = str(ev.payload.get("action_id", ""))
    rows = evidence.get("changes")
    if not action_id or not isinstance(rows, list):
        return
    action = core_node("action", action_id)
    doc = evidence.get("reservation")
    if isinstance(doc, dict):
        yield from reservation(doc, action, action_id, evidence.get("cabin_flown"))
    for n, row in enumerate(rows):
        if not isinstance(row, dict) or row.get("amount") is None:
            continue
        uid, pid = str(row.get("user_id") or ""), str(row.get("payment_id") or "")
        if not uid or not pid:
            continue
        if row.get("kind") == "certificate":
            m = node("payment-method", uid, pid)
            yield from method(uid, pid)
            yield (m, ax("amount"), _amount(row["amount"]))
            yield (m, ax("issuedTo"), node("customer", uid))
            yield from customer(uid)
            yield (m, ax("changedBy"), action)
        elif row.get("kind") in ("payment", "refund") and row.get("reservation_id"):
            p = node("payment", action_id, str(n))
            yield _a(p, "Refund" if row["kind"] == "refund" else "Payment")
            if row["kind"] == "refund":
                yield _a(p, "Payment")
            yield (p, ax("amount"), _amount(row["amount"]))
            yield (p, ax("paidWith"), node("payment-method", uid, pid))
            yield from method(uid, pid)
            yield (p, ax("paidFor"), node("reservation", str(row["reservation_id"])))
            yield from reservation_ref(str(row["reservation_id"]), uid)
            yield (p, ax("changedBy"), action)
