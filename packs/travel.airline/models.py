"""The tools' input models: the benchmark's keyword arguments, as the agent sent them.

The benchmark's ``Env.step`` hands the agent's JSON arguments to the tool unchanged: a
string where a number is due, a capitalised cabin, a missing or an unknown argument reach
its function, which raises or answers ``Error: …`` (or, for some, accepts). So the contract
coerces nothing and requires nothing: a model holds the JSON object as it came, and the
API (``api.py``) answers it as the benchmark does. Each model publishes the benchmark's
own parameter schema (``get_info()`` of its tool) for the agents that read it; gate 1's
validator refuses, as ``airline_argument_invalid``, a call the API would accept with an
argument outside that schema (``rules.malformed``), so no rule ever computes on odd types.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

_ID = {"type": "string"}
_CABIN = {"type": "string", "enum": ["basic_economy", "economy", "business"]}
_FLIGHTS = {"type": "array", "items": {"type": "object", "properties": {
    "flight_number": {"type": "string"}, "date": {"type": "string"}},
    "required": ["flight_number", "date"]}}
_PASSENGERS = {"type": "array", "items": {"type": "object", "properties": {
    "first_name": {"type": "string"}, "last_name": {"type": "string"},
    "dob": {"type": "string"}}, "required": ["first_name", "last_name", "dob"]}}
_PAYMENTS = {"type": "array", "items": {"type": "object", "properties": {
    "payment_id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["payment_id", "amount"]}}

#: the benchmark's parameters per tool (``tau_bench/envs/airline/tools/*.py``,
#: ``get_info()["function"]["parameters"]``), descriptions left out: every one required
SCHEMAS: dict[str, dict[str, Any]] = {
    "book_reservation": {
        "user_id": _ID, "origin": _ID, "destination": _ID,
        "flight_type": {"type": "string", "enum": ["one_way", "round_trip"]},
        "cabin": _CABIN, "flights": _FLIGHTS, "passengers": _PASSENGERS,
        "payment_methods": _PAYMENTS, "total_baggages": {"type": "integer"},
        "nonfree_baggages": {"type": "integer"},
        "insurance": {"type": "string", "enum": ["yes", "no"]}},
    "cancel_reservation": {"reservation_id": _ID},
    "update_reservation_flights": {"reservation_id": _ID, "cabin": _CABIN,
                                   "flights": _FLIGHTS, "payment_id": _ID},
    "update_reservation_baggages": {"reservation_id": _ID,
                                    "total_baggages": {"type": "integer"},
                                    "nonfree_baggages": {"type": "integer"},
                                    "payment_id": _ID},
    "update_reservation_passengers": {"reservation_id": _ID, "passengers": _PASSENGERS},
    "send_certificate": {"user_id": _ID, "amount": {"type": "number"}},
    "get_user_details": {"user_id": _ID},
    "get_reservation_details": {"reservation_id": _ID},
    "search_direct_flight": {"origin": _ID, "destination": _ID, "date": _ID},
    "search_onestop_flight": {"origin": _ID, "destination": _ID, "date": _ID},
    "list_all_airports": {},
    "calculate": {"expression": _ID},
    "transfer_to_human_agents": {"summary": _ID},
    "think": {"thought": _ID},
}


def _published(tool: str) -> dict[str, Any]:
    return {"properties": SCHEMAS[tool], "required": list(SCHEMAS[tool])}


class _Arguments(BaseModel):
    """The JSON object of a call's arguments, kept as it came (``model_dump`` gives it back
    unchanged): nothing coerced, nothing required, nothing forbidden."""

    model_config = ConfigDict(frozen=True, extra="allow")


class BookReservation(_Arguments):
    model_config = ConfigDict(json_schema_extra=_published("book_reservation"))


class ReservationId(_Arguments):  # cancel_reservation, get_reservation_details
    model_config = ConfigDict(json_schema_extra=_published("cancel_reservation"))


class UpdateFlights(_Arguments):
    model_config = ConfigDict(json_schema_extra=_published("update_reservation_flights"))


class UpdateBaggages(_Arguments):
    model_config = ConfigDict(json_schema_extra=_published("update_reservation_baggages"))


class UpdatePassengers(_Arguments):
    model_config = ConfigDict(json_schema_extra=_published("update_reservation_passengers"))


class SendCertificate(_Arguments):
    model_config = ConfigDict(json_schema_extra=_published("send_certificate"))


class UserId(_Arguments):
    model_config = ConfigDict(json_schema_extra=_published("get_user_details"))


class Route(_Arguments):  # search_direct_flight, search_onestop_flight
    model_config = ConfigDict(json_schema_extra=_published("search_direct_flight"))


class NoArguments(_Arguments):
    model_config = ConfigDict(json_schema_extra=_published("list_all_airports"))


class Expression(_Arguments):
    model_config = ConfigDict(json_schema_extra=_published("calculate"))


class Summary(_Arguments):
    model_config = ConfigDict(json_schema_extra=_published("transfer_to_human_agents"))


class Thought(_Arguments):
    model_config = ConfigDict(json_schema_extra=_published("think"))


class ApiAnswer(BaseModel):
    """What the API answered: ``output`` is the benchmark's return value, unchanged (JSON
    text, a message, or ``Error: …``); ``error`` repeats it when the API refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    output: str
    error: str | None = None
