"""The defaults an upstream MCP tool's input schema declares for its arguments.

An upstream tool behind ``mcp proxy`` has no fields: its model keeps the arguments as sent,
and the upstream fills in what its schema says for an argument left out. Cedar must be told
those values (a forbid on ``recursive == true`` meets a call that leaves ``recursive`` out,
``tests/security/test_382``), wherever the schema declares them: under ``properties``, but
also through ``allOf`` and a local ``$ref`` (``#/$defs/…``), at the schema's top or at the
argument's own schema (``tests/security/test_400``).

A default is *placed* when every path to it applies to every call: the schema's root,
``allOf`` and local ``$ref`` down to ``properties[name]``, then ``allOf`` and ``$ref`` down to
its ``default``, and all such defaults of a name are one value. A default under ``anyOf``,
``oneOf``, ``if``/``then``/``else``, ``not`` or ``dependentSchemas``, two that differ, or a
``$ref`` the proxy cannot follow soundly (not ``#`` or ``#/pointer``, a ``$dynamicRef``, a
schema with an ``$id`` below its root) under ``properties[name]`` leave the name's default
*unknown*: a call that leaves that argument out is refused (whatever a policy reads). A
default no argument's name can be given to (under ``patternProperties``,
``additionalProperties``, ``unevaluatedProperties``) and a ``$ref`` the proxy cannot follow
where the arguments' own schema is read refuse the tool at start (:class:`Unplaceable`).
Defaults inside an argument's value (an object's properties) are not read: Cedar's context
holds no object, and a permission condition on a path left out fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from ..canonical import canonical_json

#: schema nodes the walk may visit (each node once per name and path kind)
MAX_STEPS = 100_000
#: the keywords whose subschema applies only to some calls
_CONDITIONAL = ("anyOf", "oneOf", "not", "if", "then", "else")
#: the keywords whose subschema applies to arguments no name of the schema's says
_UNNAMED = ("patternProperties", "additionalProperties", "unevaluatedProperties")


class Unplaceable(ValueError):
    """A default (or a reference) the proxy cannot give to a named argument."""


@dataclass
class Defaults:
    """What the schema says an upstream fills in: ``known`` a value for each name placed,
    ``unknown`` why each other name with a default cannot be read for sure."""

    known: dict[str, Any] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)


@dataclass
class _Walk:
    root: Mapping[str, Any]
    sound_refs: bool
    steps: int = 0
    seen: set[tuple[int, str | None, bool]] = field(default_factory=set)
    found: dict[str, list[tuple[Any, bool, str]]] = field(default_factory=dict)

    def step(self, node: Any, name: str | None, conditional: bool) -> bool:
        key = (id(node), name, conditional)
        if key in self.seen:
            return False
        self.seen.add(key)
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Unplaceable(f"its defaults take more than {MAX_STEPS:,} steps to read")
        return isinstance(node, Mapping)

    def target(self, node: Mapping[str, Any], where: str) -> Any:
        """The schema a ``$ref`` of ``node`` names, or :class:`LookupError`."""
        if "$dynamicRef" in node or "$recursiveRef" in node:
            raise LookupError(f"a dynamic reference at `{where}`")
        ref = node.get("$ref")
        if not isinstance(ref, str) or not self.sound_refs or not (
                ref == "#" or ref.startswith("#/")):
            raise LookupError(f"the reference `{str(ref)[:80]}` at `{where}`")
        found: Any = self.root
        for part in ref[2:].split("/") if ref != "#" else []:
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(found, Mapping) and part in found:
                found = found[part]
            elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
                found = found[int(part)]
            else:
                raise LookupError(f"the reference `{ref[:80]}` at `{where}`")
        return found

    def arguments(self, node: Any, where: str, conditional: bool) -> None:
        """Walk a schema that applies to the arguments object."""
        if not self.step(node, None, conditional):
            return
        if "$ref" in node or "$dynamicRef" in node or "$recursiveRef" in node:
            try:
                self.arguments(self.target(node, where), where + "/$ref", conditional)
            except LookupError as exc:
                raise Unplaceable(f"its arguments' schema holds {exc}, which the proxy "
                                  "does not follow") from None
        props = node.get("properties")
        if isinstance(props, Mapping):
            for name, sub in props.items():
                self.argument(sub, str(name), f"{where}/properties/{name}", conditional)
        for key in _UNNAMED:
            if key == "patternProperties" and isinstance(node.get(key), Mapping):
                for pattern, sub in node[key].items():
                    self.unnamed(sub, f"{where}/{key}/{pattern}")
            elif key in node:
                self.unnamed(node[key], f"{where}/{key}")
        for sub, at, cond in _applied(node, where):
            self.arguments(sub, at, conditional or cond)
        deps = node.get("dependentSchemas")
        if isinstance(deps, Mapping):
            for dep, sub in deps.items():
                self.arguments(sub, f"{where}/dependentSchemas/{dep}", True)

    def argument(self, node: Any, name: str, where: str, conditional: bool) -> None:
        """Walk the schema of the argument ``name`` (its own value's keywords only)."""
        if not self.step(node, name, conditional):
            return
        if "default" in node:
            self.found.setdefault(name, []).append((node["default"], conditional, where))
        if "$ref" in node or "$dynamicRef" in node or "$recursiveRef" in node:
            try:
                self.argument(self.target(node, where), name, where + "/$ref", conditional)
            except LookupError as exc:
                self.found.setdefault(name, []).append((None, True, f"{exc}, not followed"))
        for sub, at, cond in _applied(node, where):
            self.argument(sub, name, at, conditional or cond)

    def unnamed(self, node: Any, where: str) -> None:
        probe = _Walk(self.root, self.sound_refs, steps=self.steps)  # one budget in all
        probe.argument(node, "*", where, False)
        self.steps = probe.steps
        for _value, _cond, at in probe.found.get("*", []):
            raise Unplaceable(f"it declares a default no argument's name is given to "
                              f"(at `{at[:120]}`)")


def _applied(node: Mapping[str, Any], where: str) -> list[tuple[Any, str, bool]]:
    """The subschemas of ``allOf`` (every call) and of the conditional keywords."""
    out: list[tuple[Any, str, bool]] = []
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            out.extend((sub, f"{where}/{key}/{i}", key != "allOf")
                       for i, sub in enumerate(node[key]))
    out.extend((node[key], f"{where}/{key}", True) for key in _CONDITIONAL[2:] if key in node)
    return out


def schema_defaults(schema: Mapping[str, Any]) -> Defaults:
    """The defaults ``schema`` declares for the arguments (see the module);
    :class:`Unplaceable` when one cannot be given to a named argument."""
    walk = _Walk(schema, sound_refs=not _embedded_ids(schema))
    walk.arguments(schema, "#", False)
    out = Defaults()
    for name, found in walk.found.items():
        values = {canonical_json(value) for value, _c, _w in found}
        conditional = [where for _v, cond, where in found if cond]
        if conditional:
            out.unknown[name] = f"a default at `{conditional[0][:120]}` applies to some calls"
        elif len(values) > 1:
            out.unknown[name] = "the schema declares two different defaults for it"
        else:
            out.known[name] = found[0][0]
    return out


def _embedded_ids(schema: Mapping[str, Any]) -> bool:
    """Whether a subschema below the root has an ``$id`` or an anchor: a reference inside
    it resolves against it, which this walk does not model."""
    stack: list[Any] = [v for v in schema.values()]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if any(k in node for k in ("$id", "$anchor", "$dynamicAnchor")):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False
