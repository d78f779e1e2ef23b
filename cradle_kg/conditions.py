"""Permission conditions: a small typed language, checked by gate 1 (check 3).

A :class:`~cradle_kg.records.Permission` grants an action type on resources; its
``conditions`` narrow the grant. Three keys, all optional, all of which must hold::

    "conditions": {
      "arguments":   {"amount": {"le": 100}, "currency": {"in": ["EUR", "USD"]}},
      "environments": ["local", "staging"],
      "time_window": {"days": ["mon", "tue", "wed", "thu", "fri"],
                      "start": "08:00", "end": "18:00", "timezone": "Europe/Paris",
                      "not_before": "2026-01-01T00:00:00Z", "not_after": null}
    }

- ``arguments``: a dotted path into the action's arguments → comparisons. ``eq``/``ne``
  take a string, number or boolean; ``lt``/``le``/``gt``/``ge`` a number (a non-number
  argument fails the condition); ``in``/``not_in`` a list of those. An absent argument
  fails. Booleans are not numbers.
- ``environments``: the action's environment is one of these.
- ``time_window``: the gate's clock (the journal's time), in ``timezone``, is on one of
  ``days`` and in ``[start, end)`` (``end`` before ``start`` spans midnight), and within
  ``not_before``/``not_after`` when given.

Any other key — ``max_amount``, a misspelt operator — is refused when the configuration
(or a pack's manifest) is loaded: a security field is never silently ignored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from datetime import datetime, time
from decimal import Decimal
from enum import Enum
from functools import lru_cache
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .canonical import canonical_json

Scalar = StrictStr | StrictInt | StrictFloat | StrictBool
Number = StrictInt | StrictFloat
Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
DAYS: tuple[Day, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$")
_HHMM = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")


class _Strict(BaseModel):
    # built on first use, not at import (``runs list``, ``tools list`` never validate one)
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True,
                              allow_inf_nan=False, defer_build=True)


class Comparison(_Strict):
    eq: Scalar | None = None
    ne: Scalar | None = None
    lt: Number | None = None
    le: Number | None = None
    gt: Number | None = None
    ge: Number | None = None
    in_: tuple[Scalar, ...] | None = Field(default=None, alias="in")
    not_in: tuple[Scalar, ...] | None = None

    @model_validator(mode="after")
    def _some(self) -> Comparison:
        if not self.operators():
            raise ValueError("a comparison needs at least one operator "
                             "(eq, ne, lt, le, gt, ge, in, not_in)")
        return self

    def operators(self) -> list[tuple[str, Any]]:
        names = ("eq", "ne", "lt", "le", "gt", "ge", "in_", "not_in")
        return [(n.rstrip("_"), getattr(self, n)) for n in names if getattr(self, n) is not None]


class TimeWindow(_Strict):
    days: tuple[Day, ...] = DAYS
    start: str = "00:00"
    end: str = "24:00"
    timezone: str = "UTC"
    not_before: AwareDatetime | None = None
    not_after: AwareDatetime | None = None

    @field_validator("start", "end")
    @classmethod
    def _hhmm(cls, v: str) -> str:
        if v != "24:00" and not _HHMM.match(v):
            raise ValueError(f"`{v}` is not a time `HH:MM`")
        return v

    @field_validator("timezone")
    @classmethod
    def _zone(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone `{v}`") from exc
        return v


class Conditions(_Strict):
    arguments: dict[str, Comparison] = Field(default_factory=dict)
    environments: tuple[str, ...] | None = None
    time_window: TimeWindow | None = None

    @field_validator("arguments")
    @classmethod
    def _paths(cls, v: dict[str, Comparison]) -> dict[str, Comparison]:
        for path in v:
            if not _PATH.match(path):
                raise ValueError(f"`{path[:80]}` is not an argument path (`name` or `a.b`)")
        return v


def parse_conditions(raw: dict[str, Any]) -> Conditions:
    """Parse (and so check) a permission's conditions; raises ``ValidationError``."""
    return _parse_cached(canonical_json(raw))


@lru_cache(maxsize=256)
def _parse_cached(text: str) -> Conditions:
    return Conditions.model_validate_json(text)


def condition_problem(raw: dict[str, Any]) -> str | None:
    """Why ``raw`` is not a valid conditions object (Cedar-style), or None."""
    try:
        parse_conditions(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"]) or "conditions"
        msg = first["msg"].lower()
        if first["type"] == "extra_forbidden":
            msg = ("unknown condition key; known: `arguments`, `environments`, `time_window` "
                   "(comparisons: eq, ne, lt, le, gt, ge, in, not_in)")
        return f"condition `{loc}`: {msg}"
    except (TypeError, ValueError) as exc:
        return f"conditions: {exc}"
    return None


_ABSENT = object()


def json_form(value: Any) -> Any:
    """A value a tool's model parsed into a type of its own — a URL, a UUID, a date, a
    time, a path, an address — as its JSON form: what the tool runs with, the form a policy
    is written on (``HTTPS://EVIL.EXAMPLE/x`` runs as ``https://evil.example/x``; a date
    written ``2024-12-25T00:00:00`` or ``1735084800`` runs as ``2024-12-25``:
    ``tests/security/test_115``). None for what has no scalar form (a container, a model)
    or hides its value (a secret, whose JSON form is its mask)."""
    if value is None or isinstance(value, list | tuple | set | frozenset | dict | BaseModel) \
            or hasattr(value, "get_secret_value"):
        return None
    try:
        return to_jsonable_python(value)
    except (TypeError, ValueError, PydanticSerializationError):
        return None


def as_written(value: Any) -> Any:
    """A value of a tool's model as a condition (and a Cedar policy) is written on: a choice
    (an ``Enum``) its value, a value the model parsed into a type of its own (a UUID, a
    date, a URL) its JSON form (:func:`json_form`); a string, a number, a boolean, an object
    or a list as it is. Before, a condition compared the parsed object: it equalled no
    string, so ``ne`` and ``not_in`` held for every value (``tests/security/test_363``)."""
    if isinstance(value, Enum):  # a choice of the model: its value
        value = value.value
    if value is None or isinstance(value, str | bool | int | float | Decimal | dict | list
                                   | tuple):
        return value
    return json_form(value)


_TWO = object()


def _lookup(arguments: dict[str, Any], path: str) -> Any:
    """The argument ``path`` names: ``a.b`` is key ``b`` of argument ``a``, or the argument
    named ``a.b`` (a tool that keeps what it is sent, an upstream MCP tool, may have one).
    :data:`_ABSENT` when none is there, ``_TWO`` when both are: one was read, the tool
    could run with the other (``tests/security/test_364``)."""
    found = list(_resolved(arguments, path.split(".")))
    return found[0] if len(found) == 1 else _ABSENT if not found else _TWO


def _resolved(value: Any, parts: list[str]) -> Iterator[Any]:
    if not parts:
        yield value
        return
    if not isinstance(value, dict):
        return
    for end in range(1, len(parts) + 1):  # INVARIANT: a path has few parts (the operator's)
        name = ".".join(parts[:end])
        if name in value:
            yield from _resolved(value[name], parts[end:])


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | Decimal) and not isinstance(v, bool) and (
        not isinstance(v, Decimal) or v.is_finite())


def _as_written(a: Any, b: Any) -> tuple[Any, Any]:
    """Two numbers as a person reads them: beside a ``Decimal`` (a model's amount), a
    finite ``float`` is the number its text writes — ``0.3`` is ``Decimal("0.3")``, not
    the binary ``0.29999999999999998…`` Python compares exactly. Before, ``not_in [0.3]``
    held for an amount of ``0.3`` and ``in [0.3]`` never did (``tests/security/
    test_381``)."""
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        a, b = (Decimal(repr(x)) if isinstance(x, float) and math.isfinite(x) else x
                for x in (a, b))
    return a, b


def _same(a: Any, b: Any) -> bool:
    """Typed equality: ``1 == True`` and ``"1" == 1`` are false here."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        a, b = _as_written(a, b)
        return bool(a == b)
    return type(a) is type(b) and a == b


def _compare(op: str, value: Any, operand: Any) -> bool:
    if op == "eq":
        return _same(value, operand)
    if op == "ne":
        return not _same(value, operand)
    if op in ("in", "not_in"):
        found = any(_same(value, o) for o in operand)
        return found if op == "in" else not found
    if not _is_number(value):
        return False
    value, operand = _as_written(value, operand)
    return bool({"lt": value < operand, "le": value <= operand,
                 "gt": value > operand, "ge": value >= operand}[op])


def _show(v: Any) -> str:
    return "`" + str(v)[:80] + "`"


def evaluate(conditions: Conditions, *, arguments: dict[str, Any], environment: str,
             now: datetime, aliases: Mapping[str, str] | None = None
             ) -> tuple[list[str], list[str]]:
    """(conditions that held, conditions that failed), each as a sentence naming it; an
    argument is compared in the form a condition is written on (:func:`as_written`).
    ``aliases``: the tool's other names of its fields (:func:`~cradle_kg.tools.
    fields_by_alias`): a condition on one reads no argument (arguments are read by field
    name), fails — closed — and says which field it means."""
    held: list[str] = []
    failed: list[str] = []
    for path, comparison in sorted(conditions.arguments.items()):
        value = _lookup(arguments, path)
        value = value if value is _ABSENT or value is _TWO else as_written(value)
        for op, operand in comparison.operators():
            name = f"`arguments.{path} {op} {list(operand) if op.endswith('in') else operand}`"
            if value is _ABSENT:
                head = path.split(".", 1)[0]
                field = (aliases or {}).get(head)
                failed.append(f"{name}: the argument is absent" + (
                    "" if field is None else f" (`{head}` is what the agent may write for "
                    f"the tool's field `{field}`: a condition names the field, "
                    f"`arguments.{field}`)"))
            elif value is _TWO:
                failed.append(f"{name}: the path names more than one argument (a key with "
                              "dots, and keys nested)")
            elif _compare(op, value, operand):
                held.append(f"{name} held ({_show(value)})")
            else:
                failed.append(f"{name} does not hold for {_show(value)}")
    if conditions.environments is not None:
        name = "`environments " + str(list(conditions.environments)) + "`"
        if environment in conditions.environments:
            held.append(f"{name} held ({_show(environment)})")
        else:
            failed.append(f"{name} does not hold for {_show(environment)}")
    if conditions.time_window is not None:
        ok, why = _in_window(conditions.time_window, now)
        (held if ok else failed).append(why)
    return held, failed


def _in_window(w: TimeWindow, now: datetime) -> tuple[bool, str]:
    local = now.astimezone(ZoneInfo(w.timezone))
    stamp = _show(local.isoformat())
    name = (f"`time_window {','.join(w.days)} {w.start}-{w.end} {w.timezone}`")
    if w.not_before is not None and now < w.not_before:
        return False, f"{name}: {stamp} is before `not_before` {_show(w.not_before.isoformat())}"
    if w.not_after is not None and now > w.not_after:
        return False, f"{name}: {stamp} is after `not_after` {_show(w.not_after.isoformat())}"
    if DAYS[local.weekday()] not in w.days:
        return False, f"{name} does not hold for {stamp} (a `{DAYS[local.weekday()]}`)"
    t = local.time()
    start = _hm(w.start)
    end = _hm(w.end)
    inside = (start <= t < end) if start <= end else (t >= start or t < end)
    if w.end == "24:00":
        inside = t >= start
    if not inside:
        return False, f"{name} does not hold for {stamp}"
    return True, f"{name} held ({stamp})"


def _hm(s: str) -> time:
    if s == "24:00":
        return time(23, 59, 59, 999999)
    h, m = s.split(":")
    return time(int(h), int(m))
