"""Draft 2020-12 validators whose work is bounded, and that never leave the process.

A schema comes from a workflow file or an upstream MCP server's tool listing — someone
else's text — and the values it checks from an agent, a model or that upstream. So every
validator the runtime builds is built here, and :func:`errors` is the one way it is run:

* **references** resolve inside the schema (``#/$defs/…``) and against the drafts' own
  metaschemas; any other is unresolvable (``jsonschema`` would otherwise fetch it with
  ``urlopen`` and no timeout), and the value is refused with a ``ValueError`` naming it;
* **regular expressions** (``pattern``, ``patternProperties``) are matched by the Rust
  ``regex`` engine pydantic-core already ships (no backtracking: time linear in the
  string), not by Python's ``re``, which takes exponential time on ``^(a+)+$`` and holds
  the GIL meanwhile — one upstream tool could freeze a whole ``mcp proxy`` with one
  argument of 30 characters. A pattern that engine cannot compile (look-around,
  back-references, past its size limit) refuses the schema when the validator is built;
* **work** is counted: one value may cost at most :data:`WORK_BASE` +
  :data:`WORK_PER_NODE` per node of it, keyword evaluations, at most :data:`MAX_NESTING`
  inside one another. A ``$ref`` loop that never descends into the value
  (``{"$ref": "#"}``), or a chain of ``anyOf`` that references one definition twice (2^n
  evaluations), ends there — not at Python's recursion limit, which ``rpds`` meets as a
  Rust panic — and the value is refused with a ``ValueError`` (it cannot be checked, so it is not
  accepted); :func:`validator` tries a few small values at once, so such a schema is
  usually refused before it checks anything. ``uniqueItems`` is checked in linear time
  (``jsonschema`` compares arrays of objects pair by pair).

``unevaluatedProperties`` still matches ``patternProperties`` with Python's ``re`` inside
``jsonschema``, so a schema that uses both is refused (tests/security/test_69).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator, validators  # type: ignore[import-untyped]
from jsonschema.exceptions import UnknownType, ValidationError  # type: ignore[import-untyped]
from pydantic_core import SchemaValidator
from pydantic_core import core_schema as core
from referencing import Registry
from referencing.exceptions import Unresolvable

from .errors import InputError

#: keyword evaluations any one value may cost, plus :data:`WORK_PER_NODE` per node of it
WORK_BASE = 20_000
WORK_PER_NODE = 50
#: keywords evaluated inside one another (about three Python frames each; a value nested
#: 32 deep under a generated schema takes about 100)
MAX_NESTING = 160
#: values a new validator is tried on (a loop in the schema shows on any of them)
_PROBES: tuple[Any, ...] = (None, {}, [], "", 0)
_work = threading.local()


class _TooMuchWork(Exception):
    """The budget of one :func:`errors` call is spent."""


class _Unsupported(ValueError):
    """A pattern the linear engine cannot compile."""


def validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema`` (see the module); :class:`InputError` when the schema
    cannot be checked with bounded work (its callers check it against the metaschema)."""
    try:
        _refuse_unbounded(schema)
        checker = _Bounded(schema, registry=Registry())
        for probe in _PROBES:
            errors(checker, probe)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"the schema cannot be checked: {str(exc)[:300]}") from None
    return checker


def errors(checker: Draft202012Validator, value: Any) -> list[ValidationError]:
    """Every way ``value`` breaks the schema; ``ValueError`` when it cannot be checked
    (a reference outside the schema, a pattern the engine refuses, the work budget)."""
    _work.left, _work.depth = WORK_BASE + WORK_PER_NODE * _nodes(value), 0
    try:
        return list(checker.iter_errors(value))
    except Unresolvable as exc:
        ref = str(getattr(exc, "ref", exc))[:200]
        raise ValueError(f"the schema refers to `{ref}`, which is not in it "
                         "(references outside a schema are not followed)") from None
    except _Unsupported as exc:
        raise ValueError(str(exc)) from None
    except UnknownType as exc:
        raise ValueError(f"the schema names an unknown type `{str(exc.type)[:80]}`") from None
    except (_TooMuchWork, RecursionError):
        raise ValueError("checking the value against the schema takes more than "
                         f"{WORK_BASE:,} + {WORK_PER_NODE} per node of the value steps, or "
                         f"{MAX_NESTING} nested ones (a schema that loops or repeats "
                         "itself)") from None
    finally:
        _work.left = None


def _nodes(value: Any) -> int:
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


def _refuse_unbounded(schema: dict[str, Any]) -> None:
    """Compile every pattern with the linear engine; refuse ``unevaluatedProperties``
    beside ``patternProperties`` (``jsonschema`` matches those with ``re``). Every node is
    looked at, in whatever position: a ``$ref`` may point anywhere in the schema."""
    seen: set[str] = set()
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        stack.extend(node.values())
        if isinstance(node.get("pattern"), str):
            _regex(node["pattern"])
        if isinstance(node.get("patternProperties"), dict):
            seen.add("patternProperties")
            for pattern in node["patternProperties"]:
                _regex(pattern)
        if "unevaluatedProperties" in node:
            seen.add("unevaluatedProperties")
    if len(seen) == 2:
        raise ValueError("`unevaluatedProperties` beside `patternProperties` is not "
                         "supported (its patterns would be matched by a backtracking engine)")


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> SchemaValidator:
    return SchemaValidator(core.str_schema(pattern=pattern, regex_engine="rust-regex",
                                           strict=True))


def _regex(pattern: Any) -> SchemaValidator:
    if not isinstance(pattern, str):
        raise _Unsupported(f"a pattern must be a string, not `{type(pattern).__name__}`")
    try:
        return _compiled(pattern)
    except Exception as exc:  # pydantic_core's SchemaError, whatever the engine said
        said = str(exc).split("\n")
        detail = next((s.strip() for s in reversed(said) if "error" in s), said[-1])
        raise _Unsupported(f"the pattern `{pattern[:100]}` is not supported by the "
                           f"linear-time regex engine: {detail[:160]}") from None


def _search(pattern: Any, text: str) -> bool:
    return _regex(pattern).isinstance_python(text)


def _pattern(checker: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if checker.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance[:80]!r} does not match {str(pattern)[:80]!r}")


def _pattern_properties(checker: Any, patterns: Any, instance: Any,
                        schema: Any) -> Iterator[Any]:
    if not checker.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from checker.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return {key for key in instance if key not in properties
            and not any(_search(p, key) for p in patterns)}


def _additional_properties(checker: Any, allowed: Any, instance: Any,
                           schema: Any) -> Iterator[Any]:
    if not checker.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if checker.is_type(allowed, "object"):
        for extra in sorted(extras):
            yield from checker.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        named = ", ".join(repr(e)[:80] for e in sorted(extras)[:20])
        yield ValidationError(f"Additional properties are not allowed ({named} unexpected)")


def _unique_items(checker: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not unique or not checker.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for item in instance:
        key = _equality_key(item)
        if key in seen:
            yield ValidationError("the array has non-unique elements")
            return
        seen.add(key)


def _equality_key(value: Any) -> Any:
    """Equal under JSON Schema (``1 == 1.0``, ``true != 1``) exactly when the keys are."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, dict):
        return ("o", frozenset((k, _equality_key(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("a", tuple(_equality_key(v) for v in value))
    if value is None:
        return ("z",)
    return ("s" if isinstance(value, str) else "n", value)


def _counted(keyword: Callable[..., Iterator[Any]]) -> Callable[..., Iterator[Any]]:
    def counted(checker: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        left = getattr(_work, "left", None)
        if left is None:  # not under errors(): not counted
            yield from keyword(checker, value, instance, schema)
            return
        # INVARIANT: the nesting ends well before Python's recursion limit, which would
        # otherwise be met inside a Rust extension's callback (a panic, not an error)
        if left <= 0 or _work.depth >= MAX_NESTING:
            raise _TooMuchWork
        _work.left, _work.depth = left - 1, _work.depth + 1
        try:
            yield from keyword(checker, value, instance, schema)
        finally:
            _work.depth -= 1
    return counted


_OWN: dict[str, Callable[..., Iterator[Any]]] = {
    "pattern": _pattern, "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties, "uniqueItems": _unique_items}
# INVARIANT: every keyword of the draft is counted, and none matches with `re`
_Bounded = validators.extend(Draft202012Validator, {
    name: _counted(_OWN.get(name, keyword))
    for name, keyword in Draft202012Validator.VALIDATORS.items()})
