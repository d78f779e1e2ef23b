"""Three-valued (Kleene) logic and the small rule language the pack's rules are written in.

``Tri`` orders FALSE < UNKNOWN < TRUE, so Kleene ``and`` is ``min``, ``or`` is ``max`` and
``not`` swaps TRUE and FALSE. A rule is a tree of ``Cond`` atoms (one attribute compared
with one constant) combined by ``All`` / ``AnyOf`` / ``Not``. An atom over an attribute
whose value is unknown (``None``) is UNKNOWN — never a guess.

``relevant_unknowns`` names the unknown attributes that actually hold a rule at UNKNOWN:
an ``All`` with a FALSE member or an ``AnyOf`` with a TRUE member is decided, so the
unknowns beneath it do not matter and are not reported as missing facts.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Tri(Enum):
    FALSE = 0
    UNKNOWN = 1
    TRUE = 2

    @classmethod
    def of(cls, value: bool | None) -> Tri:
        if value is None:
            return cls.UNKNOWN
        return cls.TRUE if value else cls.FALSE

    def __and__(self, other: Tri) -> Tri:
        return Tri(min(self.value, other.value))

    def __or__(self, other: Tri) -> Tri:
        return Tri(max(self.value, other.value))

    def __invert__(self) -> Tri:
        return Tri(2 - self.value)

    def __bool__(self) -> bool:
        raise TypeError("a Tri has no truth value: compare it with Tri.TRUE explicitly")

    @property
    def label(self) -> str:
        return self.name.lower()


Scalar = bool | float | int | str
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class Cond:
    """``attribute <op> operand``; UNKNOWN when the attribute's value is None."""

    attribute: str
    op: str
    operand: Scalar

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"unknown operator `{self.op}`")

    def text(self) -> str:
        return f"{self.attribute} {self.op} {self.operand!r}"


@dataclass(frozen=True)
class All:
    members: tuple[Expr, ...]

    def text(self) -> str:
        return "(" + " and ".join(m.text() for m in self.members) + ")"


@dataclass(frozen=True)
class AnyOf:
    members: tuple[Expr, ...]

    def text(self) -> str:
        return "(" + " or ".join(m.text() for m in self.members) + ")"


@dataclass(frozen=True)
class Not:
    member: Expr

    def text(self) -> str:
        return f"not {self.member.text()}"


Expr = Cond | All | AnyOf | Not


def all_of(*members: Expr) -> All:
    return All(tuple(members))


def any_of(*members: Expr) -> AnyOf:
    return AnyOf(tuple(members))


def evaluate(expr: Expr, attrs: Mapping[str, object]) -> Tri:
    if isinstance(expr, Cond):
        value = attrs.get(expr.attribute)
        if value is None:
            return Tri.UNKNOWN
        return Tri.of(_OPS[expr.op](value, expr.operand))
    if isinstance(expr, Not):
        return ~evaluate(expr.member, attrs)
    if isinstance(expr, All):
        result = Tri.TRUE
        for member in expr.members:
            result = result & evaluate(member, attrs)
        return result
    result = Tri.FALSE
    for member in expr.members:
        result = result | evaluate(member, attrs)
    return result


def relevant_unknowns(expr: Expr, attrs: Mapping[str, object]) -> list[str]:
    """Attributes whose being unknown keeps ``expr`` UNKNOWN (first-seen order, no repeats)."""
    if evaluate(expr, attrs) is not Tri.UNKNOWN:
        return []
    if isinstance(expr, Cond):
        return [expr.attribute]
    if isinstance(expr, Not):
        return relevant_unknowns(expr.member, attrs)
    out: list[str] = []
    for member in expr.members:
        for name in relevant_unknowns(member, attrs):
            if name not in out:
                out.append(name)
    return out


def attributes_of(expr: Expr) -> set[str]:
    if isinstance(expr, Cond):
        return {expr.attribute}
    if isinstance(expr, Not):
        return attributes_of(expr.member)
    names: set[str] = set()
    for member in expr.members:
        names |= attributes_of(member)
    return names
