"""Secret arguments: what a tool declares a credential, and how every view hides it.

A tool's input model that types a field ``pydantic.SecretStr`` / ``SecretBytes`` — or
whose JSON Schema marks it ``writeOnly: true`` or ``format: password``, which is what
pydantic emits for those types, and what an upstream MCP tool's ``inputSchema`` may say —
declares that argument a secret (``ToolSpec.secret_arguments`` and a proxy contract's
``secret_arguments`` add names by hand). The journal keeps the proposal as it was sent
(it is the record: replay and recovery run it again); the events that carry an action's
arguments name its secret ones (``secret_arguments``), and everything made *from* the
journal for someone to read — the graph (lineage's ``cradle:argumentValue`` and
``cradle:quote``), the reasons a decision gives, an approval's action on the page, the
inbox and the API — shows the value as :data:`MASK`, pydantic's own, keeping the key so
an auditor sees that a secret was given (``tests/security/test_131`` …).

An action's digest binds a secret through its HMAC under the journal's digest key
(:func:`action_digest`), so the digest shown cannot test a guess (``test_135``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .canonical import canonical_json, content_hash

#: what a secret value is shown as (pydantic's ``SecretStr`` mask)
MASK = "**********"
#: the payload key naming the secret arguments of the action an event carries
SECRET_KEY = "secret_arguments"


#: the key of the object a secret argument's value is replaced by in an action's digest
KEYED_FORM = "hmac-sha256"


def keyed_value(value: Any, key: bytes) -> dict[str, str]:
    """A secret argument's value as an action's digest binds it: its HMAC-SHA256 (of its
    canonical JSON) under ``key``, never the value."""
    mac = hmac.new(key, canonical_json(value).encode("utf-8"), hashlib.sha256)
    return {KEYED_FORM: mac.hexdigest()}


def action_digest(action: Mapping[str, Any], *, secrets: Collection[str] = (),
                  key: bytes | None = None) -> str:
    """The digest of an action (its JSON form: ``action_type``, ``target``, ``arguments``,
    ``environment``, ``dry_run``): a sha256 of them, each of ``secrets`` (the tool's secret
    arguments) replaced by :func:`keyed_value` under ``key`` first (no key: the digest
    made before secrets were keyed, which older journals hold)."""
    arguments = action.get("arguments")
    if secrets and key is not None and isinstance(arguments, Mapping):
        arguments = {name: keyed_value(value, key) if name in secrets else value
                     for name, value in arguments.items()}
    return content_hash({"tool": action.get("action_type"), "target": action.get("target"),
                         "arguments": arguments, "environment": action.get("environment"),
                         "dry_run": action.get("dry_run")})


def schema_secrets(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """The top-level properties a JSON Schema marks secret (``writeOnly: true`` or
    ``format: password``, through an ``anyOf``/``oneOf`` of an optional field too)."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return ()
    return tuple(sorted(name for name, sub in props.items()
                        if isinstance(name, str) and _marks_secret(sub)))


def _marks_secret(sub: Any) -> bool:
    if not isinstance(sub, Mapping):
        return False
    if sub.get("writeOnly") is True or sub.get("format") == "password":
        return True
    alternatives = [alt for key in ("anyOf", "oneOf", "allOf")
                    if isinstance(found := sub.get(key), list) for alt in found]
    return any(_marks_secret(alt) for alt in alternatives)


def secret_names(payload: Mapping[str, Any]) -> frozenset[str]:
    """The secret arguments an event's payload names (none for an older event)."""
    found = payload.get(SECRET_KEY)
    return frozenset(str(n) for n in found) if isinstance(found, list | tuple) else frozenset()


def mask_arguments(arguments: Mapping[str, Any], secret: Iterable[str]) -> dict[str, Any]:
    """``arguments`` with each secret one's value shown as :data:`MASK` (the key kept)."""
    hidden = set(secret)
    return {k: (MASK if k in hidden and v is not None else v) for k, v in arguments.items()}


def mask_action(action: Mapping[str, Any], secret: Iterable[str]) -> dict[str, Any]:
    """An action's JSON form (``Action.model_dump(mode="json")``) as it may be shown."""
    hidden = frozenset(secret)
    if not hidden or not isinstance(action.get("arguments"), Mapping):
        return dict(action)
    return {**action, "arguments": mask_arguments(action["arguments"], hidden)}


def secret_values(arguments: Mapping[str, Any], secret: Iterable[str]) -> tuple[str, ...]:
    """The texts of the secret arguments' values (a list's items and an object's values
    each, :func:`_leaves`), to scrub from a text that quotes them."""
    out: list[str] = []
    for name in secret:
        out.extend(_leaves(arguments.get(name), 0))
    return tuple(dict.fromkeys(out))


def _leaves(value: Any, depth: int) -> list[str]:
    """The texts of a secret value: itself, a list's items, an object's values (those of
    at least 4 characters), at any depth up to a bound — ``credentials: {user,
    password}`` declared secret as a whole was masked in the views but relayed in clear
    in a reason (``tests/security/test_143``)."""
    if isinstance(value, Mapping) and depth < 16:
        return [t for v in value.values() for t in _leaves(v, depth + 1)]
    if isinstance(value, list | tuple) and depth < 16:
        return [t for v in value for t in _leaves(v, depth + 1)]
    text = str(value).strip() if isinstance(value, str | int | float) \
        and not isinstance(value, bool) else ""
    # inside an object, a short value (a port, a flag) is no credential of its own: masked
    # in every text of the run's views, it would hide each `22` and `on` of the run
    return [text] if text and (depth == 0 or len(text) >= 4) else []


def _spellings(value: str) -> tuple[str, ...]:
    """``value`` as written, and as a message quotes it escaped: Python's ``repr`` (a
    schema validator's ``'pa\\\\ss' is too long``) and JSON's, ASCII or not — a secret
    with a backslash, a quote or a control character was relayed in clear in its escaped
    form (``tests/security/test_142``)."""
    return (value, repr(value)[1:-1], json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1])


def scrub(text: str, values: Iterable[str]) -> str:
    """``text`` with every occurrence of each value (any case, not inside a longer word;
    as written or escaped, :func:`_spellings`) shown as :data:`MASK`."""
    ordered = sorted({s for v in values if v for s in _spellings(v) if s}, key=len,
                     reverse=True)
    if not ordered or not text:
        return text
    either = "|".join(re.escape(v) for v in ordered)
    return re.sub(rf"(?<!\w)(?:{either})(?!\w)", MASK, text, flags=re.IGNORECASE)


def secrets_by_tool(payloads: Iterable[Mapping[str, Any]]
                    ) -> tuple[dict[str, frozenset[str]], tuple[str, ...]]:
    """The secret arguments of each tool, as the events' payloads name them, and the
    values the proposals among them gave those arguments."""
    found: dict[str, set[str]] = {}
    values: list[str] = []
    for payload in payloads:
        names = secret_names(payload)
        action = (payload.get("proposal") or {}).get("action") or payload.get("action") or {}
        tool = action.get("action_type") if isinstance(action, Mapping) else None
        tool = tool or (payload.get("trace") or {}).get("tool")
        if names and isinstance(tool, str):
            found.setdefault(tool, set()).update(names)
            if isinstance(action.get("arguments"), Mapping):
                values.extend(secret_values(action["arguments"], names))
    return ({tool: frozenset(names) for tool, names in found.items()},
            tuple(dict.fromkeys(values)))


def mask_payload(value: Any, by_tool: Mapping[str, frozenset[str]],
                 values: Iterable[str] = ()) -> Any:
    """An event's payload (its JSON form) as it may be shown: every action in it (a
    mapping with ``action_type`` and ``arguments``) and every lineage trace (``tool`` and
    its ``arguments``' values) with its tool's secret arguments masked, and ``values``
    (the secrets themselves) masked in every text (a request, a quote, a tool's answer)."""
    known = tuple(values)
    if isinstance(value, str):
        return scrub(value, known)
    if isinstance(value, list):
        return [mask_payload(v, by_tool, known) for v in value]
    if not isinstance(value, Mapping):
        return value
    out = {k: mask_payload(v, by_tool, known) for k, v in value.items()}
    hidden = by_tool.get(str(value.get("action_type") or value.get("tool") or ""))
    if not hidden:
        return out
    if isinstance(out.get("arguments"), Mapping):
        out["arguments"] = mask_arguments(out["arguments"], hidden)
    elif isinstance(out.get("arguments"), list):  # a trace: [{name, value, ...}]
        out["arguments"] = [{**a, "value": MASK} if isinstance(a, Mapping)
                            and a.get("name") in hidden else a for a in out["arguments"]]
    return out
