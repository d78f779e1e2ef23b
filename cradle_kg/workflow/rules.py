"""Readable deterministic rules learned from human decisions: a small decision tree.

The learner is CART with Gini impurity over the step's declared fields only. Splits are
``field == value`` for text fields and ``field <= threshold`` for numbers (thresholds at
midpoints of seen values). Ties break on field order, then value order, so the same
history always gives the same rule. Depth is bounded (default 3) to keep the rule
readable: it is a rule a person can check line by line, not a model.

A rule declares its **coverage**: for each field it may read, the values (text) or the
range (numbers) seen while learning. An input outside the coverage is not decided by
the rule — the human step reopens, and the reason says which field left the domain.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..canonical import content_hash

Sample = tuple[Mapping[str, Any], str]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Node(_Frozen):
    #: a leaf when ``decision`` is set
    decision: str | None = None
    support: int = 0
    field: str | None = None
    op: Literal["==", "<="] | None = None
    value: str | float | None = None
    yes: Node | None = None
    no: Node | None = None


class Coverage(_Frozen):
    kind: Literal["values", "range"]
    values: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None

    def contains(self, value: Any) -> bool:
        if self.kind == "values":
            return str(value) in self.values
        return (_is_number(value) and self.low is not None and self.high is not None
                and self.low <= float(value) <= self.high)

    def describe(self) -> str:
        if self.kind == "values":
            return "{" + ", ".join(f"`{v}`" for v in self.values) + "}"
        return f"[{self.low:g}, {self.high:g}]"


class Rule(_Frozen):
    decision_field: str
    fields: tuple[str, ...]
    tree: Node
    coverage: dict[str, Coverage]

    @property
    def version(self) -> str:
        return "rule:" + content_hash(self.model_dump(mode="json"))[7:23]

    def decide(self, inputs: Mapping[str, Any]) -> str:
        node = self.tree
        while node.decision is None:
            assert node.field is not None and node.yes is not None and node.no is not None
            node = node.yes if _test(node, inputs.get(node.field)) else node.no
        return node.decision

    def outside(self, inputs: Mapping[str, Any]) -> list[str]:
        """Why this input is outside the rule's coverage (empty when inside)."""
        return [f"`{name}` = `{inputs.get(name)}` is outside the coverage {cov.describe()}"
                for name, cov in self.coverage.items() if not cov.contains(inputs.get(name))]

    def render(self) -> str:
        lines: list[str] = []
        _render(self.tree, 0, lines, self.decision_field)
        cover = "; ".join(f"{k} in {v.describe()}" for k, v in self.coverage.items())
        return "\n".join([*lines, f"# coverage: {cover}"])


def _is_number(value: Any) -> bool:
    """A number a rule compares: one a float holds (an integer past it, journaled before
    model answers were read strictly, is a value, never an ``OverflowError``: test_411)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _test(node: Node, value: Any) -> bool:
    if node.op == "<=":
        return _is_number(value) and float(value) <= float(node.value or 0)
    return str(value) == node.value


def _render(node: Node, depth: int, lines: list[str], target: str) -> None:
    pad = "    " * depth
    if node.decision is not None:
        lines.append(f"{pad}{target} = {node.decision!r}   # {node.support} decisions")
        return
    value = f"{node.value:g}" if isinstance(node.value, float) else repr(node.value)
    lines.append(f"{pad}if {node.field} {node.op} {value}:")
    assert node.yes is not None and node.no is not None
    _render(node.yes, depth + 1, lines, target)
    lines.append(f"{pad}else:")
    _render(node.no, depth + 1, lines, target)


def _gini(labels: Sequence[str]) -> float:
    n = len(labels)
    return 1.0 - sum((c / n) ** 2 for c in Counter(labels).values()) if n else 0.0


def _majority(labels: Sequence[str]) -> str:
    counts = Counter(labels)
    return sorted(counts, key=lambda k: (-counts[k], k))[0]


def _candidates(samples: Sequence[Sample], name: str) -> list[tuple[str, str | float]]:
    values: list[Any] = [s[0].get(name) for s in samples]
    if values and all(_is_number(v) for v in values):
        seen = sorted({float(v) for v in values})
        return [("<=", (a + b) / 2) for a, b in pairwise(seen)]
    return [("==", v) for v in sorted({str(v) for v in values})]


def _split(samples: Sequence[Sample], fields: Sequence[str],
           min_leaf: int) -> tuple[str, str, str | float] | None:
    labels = [s[1] for s in samples]
    best: tuple[float, str, str, str | float] | None = None
    base = _gini(labels)
    for name in fields:
        for op, value in _candidates(samples, name):
            probe = Node(field=name, op=op, value=value)
            yes = [s[1] for s in samples if _test(probe, s[0].get(name))]
            no = [s[1] for s in samples if not _test(probe, s[0].get(name))]
            if len(yes) < min_leaf or len(no) < min_leaf:
                continue
            n = len(samples)
            gain = base - (len(yes) * _gini(yes) + len(no) * _gini(no)) / n
            if gain > 1e-12 and (best is None or gain > best[0] + 1e-12):
                best = (gain, name, op, value)
    return None if best is None else best[1:]


def _grow(samples: Sequence[Sample], fields: Sequence[str], depth: int,
          min_leaf: int) -> Node:
    labels = [s[1] for s in samples]
    leaf = Node(decision=_majority(labels), support=len(samples))
    if depth == 0 or len(set(labels)) == 1:
        return leaf
    found = _split(samples, fields, min_leaf)
    if found is None:
        return leaf
    name, op, value = found
    probe = Node(field=name, op=op, value=value)
    yes = _grow([s for s in samples if _test(probe, s[0].get(name))], fields, depth - 1, min_leaf)
    no = _grow([s for s in samples if not _test(probe, s[0].get(name))], fields, depth - 1,
               min_leaf)
    if yes.decision is not None and yes.decision == no.decision:
        return leaf
    return probe.model_copy(update={"yes": yes, "no": no, "support": len(samples)})


def _coverage(samples: Sequence[Sample], name: str) -> Coverage:
    values: list[Any] = [s[0].get(name) for s in samples]
    if values and all(_is_number(v) for v in values):
        return Coverage(kind="range", low=min(float(v) for v in values),
                        high=max(float(v) for v in values))
    return Coverage(kind="values", values=tuple(sorted({str(v) for v in values})))


def learn(samples: Sequence[Sample], *, fields: Sequence[str], decision_field: str,
          max_depth: int = 3, min_leaf: int = 2) -> Rule:
    """Learn a readable rule; its coverage lists every field it was allowed to read."""
    tree = _grow(samples, list(fields), max_depth, min_leaf)
    return Rule(decision_field=decision_field, fields=tuple(fields), tree=tree,
                coverage={name: _coverage(samples, name) for name in fields})


def reproduction(rule: Rule, samples: Sequence[Sample]) -> tuple[float, list[int]]:
    """The share of samples the rule reproduces, and the indexes of the mismatches."""
    misses = [i for i, (inputs, label) in enumerate(samples) if rule.decide(inputs) != label]
    rate = (len(samples) - len(misses)) / len(samples) if samples else 0.0
    return rate, misses
