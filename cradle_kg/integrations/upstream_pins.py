"""What an agent may be shown of an upstream MCP tool, and the pin that names what the
operator reviewed (``cradle-kg mcp proxy``, :mod:`.proxy`).

An upstream's description and its input schema's prose are text the runtime never
journals: lineage could not trace a value planted there (``tests/security/test_127``). A
contract's ``pin`` is the hash of the tool's definition the operator reviewed
(:func:`pin_of`); an unpinned tool is shown its input schema as grammar only
(:func:`grammar_of`), whose own words are :func:`plain` words, and a tool whose grammar
cannot leave out a name that is not plain (:func:`planted`) is not served unpinned.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..canonical import content_hash
from ..errors import InputError

if TYPE_CHECKING:
    from mcp import types

#: the parts of an upstream tool's definition a pin covers: what the agent could be shown
#: of it, and what the proxy acts on (its schemas, its annotations)
PINNED = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
#: the keywords of a JSON Schema that say what a call must be (kept in the schema an
#: unpinned tool is shown with); the others — ``description``, ``title``, ``examples``,
#: ``default``, ``$comment``, any extension — are the upstream's prose, not shown
GRAMMAR = frozenset({
    "type", "required", "enum", "const", "format", "pattern", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
    "minItems", "maxItems", "uniqueItems", "minContains", "maxContains", "minProperties",
    "maxProperties", "dependentRequired", "$ref", "$defs", "definitions", "properties",
    "patternProperties", "dependentSchemas", "items", "prefixItems", "additionalProperties",
    "unevaluatedProperties", "unevaluatedItems", "contains", "propertyNames", "not", "if",
    "then", "else", "anyOf", "oneOf", "allOf",
    # not prose: whether a value is a credential (``writeOnly``, with ``format: password``
    # above), which masks it in the graph and every view (``cradle_kg.redaction``)
    "writeOnly", "readOnly"})
#: the grammar keywords whose value maps names to schemas, or lists schemas
_NAMED_SCHEMAS = frozenset({"$defs", "definitions", "properties", "patternProperties",
                            "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"prefixItems", "anyOf", "oneOf", "allOf"})
#: grammar an unpinned tool is not shown: regexes, which may hold any text
_UNSHOWN = frozenset({"pattern", "patternProperties"})


def definition_of(tool: types.Tool) -> dict[str, Any]:
    """The parts of ``tool`` a pin covers (:data:`PINNED`), as JSON."""
    dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {k: dumped[k] for k in PINNED if k in dumped}


def pin_of(tool: types.Tool) -> str:
    """``sha256:<hex>`` of the canonical JSON of the tool's definition: what a contract's
    ``pin`` holds (``cradle-kg mcp pins`` prints it)."""
    try:
        return content_hash(definition_of(tool))
    except ValueError:  # NaN or an infinity in a schema: no definition a pin can name
        raise InputError(f"the upstream's `{tool.name}` declares a definition no pin can "
                         "hold (a NaN or infinite number)") from None


#: the only text of the upstream's an unpinned tool shows: a plain word (a property's name,
#: an ``enum``'s value) — no space, no ``@``, ``.``, ``/`` or ``:``, at most 64 characters
_PLAIN_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
#: five digits in a row, once ``_`` and ``-`` are taken out: an account's, an IBAN's, a
#: card's or a phone's number, however grouped
_LONG_NUMBER = re.compile(r"\d{5}")


def plain(value: Any) -> bool:
    """Whether ``value`` — a name or an ``enum``/``const`` value the upstream chose — can be
    shown unreviewed: a plain word or a short number, which holds no address, link, IBAN,
    account or phone number and no sentence. Such a value shown to the agent had no origin
    lineage could name, and a write to it executed unattended (``tests/security/test_137``)."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return not _LONG_NUMBER.search(str(abs(value)))
    if not isinstance(value, str) or _PLAIN_WORD.fullmatch(value) is None:
        return False
    return not _LONG_NUMBER.search(value.replace("_", "").replace("-", ""))


def shown_values(keyword: str, value: Any) -> bool:
    """Whether an ``enum``'s values (each), a ``const`` or a ``format`` may be shown
    unpinned: each :func:`plain`."""
    values = value if keyword == "enum" and isinstance(value, list) else [value]
    return all(plain(v) for v in values)


def shown_number(value: Any) -> bool:
    """Whether a grammar keyword's value may be shown unpinned as far as numbers go: not a
    number (a name, a list of names, a schema: checked where it is read), or a
    :func:`plain` one. A bound (``minimum``, ``maximum``, ``multipleOf``, ``maxLength`` …)
    is any number the upstream chose: ``"maximum": 4155550123`` reached the agent as its
    grammar, and a call above it was told the number (``tests/security/test_145``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    return plain(value)


def grammar_of(schema: Any) -> Any:
    """``schema`` with the upstream's prose taken out: the keywords of :data:`GRAMMAR`
    only, at every depth — what an agent needs to make a call, and nothing the upstream
    wrote for it to read. An ``enum``'s or a ``const``'s values, a ``format`` and a
    numeric bound stay when each is :func:`plain` (:func:`shown_number`); a ``pattern``
    (a regex: any text) is not shown. The arguments are still checked against the whole
    schema (a pin shows the rest). Names the grammar
    cannot leave out — a property's, a definition's — are checked by :func:`planted`."""
    if isinstance(schema, list):  # `items` as a list (drafts before 2020-12)
        return [grammar_of(s) for s in schema]
    if not isinstance(schema, dict):
        return schema  # a boolean schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in GRAMMAR or key in _UNSHOWN:
            continue
        if key == "$ref" and not str(value).startswith("#"):
            continue  # a link elsewhere (never followed: the call is refused)
        if key in ("enum", "const", "format") and not shown_values(key, value):
            continue
        if not shown_number(value):
            continue  # a bound holding a long number: checked, not shown
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            kept[key] = {k: grammar_of(v) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            kept[key] = [grammar_of(v) for v in value]
        elif key in {"items", "additionalProperties", "unevaluatedProperties",
                     "unevaluatedItems", "contains", "propertyNames", "not", "if", "then",
                     "else"}:
            kept[key] = grammar_of(value)
        else:
            kept[key] = value
    return kept


def planted(schema: Any, at: str = "") -> list[str]:
    """The names in an unpinned tool's grammar that are not :func:`plain` — a property's, a
    definition's, a ``required`` one, a local ``$ref``'s parts — with where they are: the
    grammar cannot leave a name out, so such a tool is not served unpinned."""
    found: list[str] = []
    if isinstance(schema, list):
        for i, sub in enumerate(schema):
            found += planted(sub, f"{at}/{i}")
        return found
    if not isinstance(schema, dict):
        return found
    for key, value in schema.items():
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            found += [f"{at}/{key}" for name in value if not plain(name)]
            for name, sub in value.items():
                if plain(name):
                    found += planted(sub, f"{at}/{key}/{name}")
        elif key == "required" and isinstance(value, list):
            found += [f"{at}/required" for name in value if not plain(name)]
        elif key == "dependentRequired" and isinstance(value, dict):
            found += [f"{at}/dependentRequired" for name, names in value.items()
                      if not plain(name) or not isinstance(names, list)
                      or not all(plain(n) for n in names)]
        elif key == "$ref":
            parts = str(value).removeprefix("#").split("/") if isinstance(value, str) else [""]
            if not str(value).startswith("#") or not all(
                    p in ("", "$defs", "definitions") or plain(p) for p in parts):
                found.append(f"{at}/$ref")
        elif isinstance(value, dict | list):
            found += planted(value, f"{at}/{key}")
    return found


def changed_message(name: str, pinned: str, now: str | None) -> str:
    """The one line that says an upstream tool is not what the operator reviewed."""
    said = f"now {now[:23]}…" if now is not None else "no longer offered"
    return (f"the upstream's `{name}` changed since it was reviewed (pinned {pinned[:23]}…, "
            f"{said}): not served until the operator reviews it again")


PIN_HINT = ("an unpinned tool shows the agent only plain words of the upstream's (no "
            "address, link, number or sentence); review its definition with `cradle-kg mcp "
            "pins --contracts FILE --show -- COMMAND` and write its `pin:` in the contract")
REPIN_HINT = ("review it: `cradle-kg mcp pins --contracts FILE --show -- COMMAND` (or "
              "`--upstream URL`) prints each tool's definition and pin; write the new `pin:` "
              "in its contract")
