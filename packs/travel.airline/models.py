"""The tools' input models: the benchmark's keyword arguments, names and types unchanged."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ID = Field(min_length=1, max_length=128)
Cabin = Literal["basic_economy", "economy", "business"]
Amount = int | float


class _In(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Item(BaseModel):
    """An object inside a list argument. The benchmark's schema names its keys without
    forbidding others, and its API keeps what it is given (an agent that copies a flight
    with its `origin` and `price` is answered, not refused): extra keys pass through."""

    model_config = ConfigDict(frozen=True, extra="allow")


class FlightRef(_Item):
    flight_number: str = ID
    date: str = Field(min_length=1, max_length=32)


class Passenger(_Item):
    first_name: str = Field(min_length=1, max_length=128)
    last_name: str = Field(min_length=1, max_length=128)
    dob: str = Field(min_length=1, max_length=32)


class PaymentAmount(_Item):
    payment_id: str = ID
    amount: Amount


class BookReservation(_In):
    user_id: str = ID
    origin: str = ID
    destination: str = ID
    flight_type: Literal["one_way", "round_trip"]
    cabin: Cabin
    flights: list[FlightRef] = Field(min_length=1, max_length=16)
    passengers: list[Passenger] = Field(min_length=1, max_length=64)
    payment_methods: list[PaymentAmount] = Field(max_length=16)
    total_baggages: int = Field(ge=0, le=1000)
    nonfree_baggages: int = Field(ge=0, le=1000)
    insurance: Literal["yes", "no"]


class ReservationId(_In):
    reservation_id: str = ID


class UpdateFlights(_In):
    reservation_id: str = ID
    cabin: Cabin
    flights: list[FlightRef] = Field(min_length=1, max_length=16)
    payment_id: str = ID


class UpdateBaggages(_In):
    reservation_id: str = ID
    total_baggages: int = Field(ge=0, le=1000)
    nonfree_baggages: int = Field(ge=0, le=1000)
    payment_id: str = ID


class UpdatePassengers(_In):
    reservation_id: str = ID
    passengers: list[Passenger] = Field(min_length=1, max_length=64)


class SendCertificate(_In):
    user_id: str = ID
    amount: Amount = Field(gt=0, le=100_000)


class UserId(_In):
    user_id: str = ID


class Route(_In):
    origin: str = ID
    destination: str = ID
    date: str = Field(min_length=1, max_length=32)


class NoArguments(_In):
    pass


class Expression(_In):
    expression: str = Field(max_length=1000)


class Summary(_In):
    summary: str = Field(max_length=10_000)


class Thought(_In):
    thought: str = Field(max_length=10_000)


class ApiAnswer(BaseModel):
    """What the API answered: ``output`` is the benchmark's return value, unchanged (JSON
    text, a message, or ``Error: …``); ``error`` repeats it when the API refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    output: str
    error: str | None = None
