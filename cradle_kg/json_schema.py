"""Draft 2020-12 validators that never leave the process to resolve a ``$ref``.

``jsonschema`` still fetches a ``$ref`` it does not hold (``http://…``, ``file://…``)
with ``urlopen`` and no timeout, unless the validator is given its own registry (a
deprecated default). A schema comes from a workflow file or an upstream MCP server's
tool listing — someone else's text — so every validator the runtime builds is built
here: its references resolve inside the schema (``#/$defs/…``) and against the drafts'
own metaschemas; any other is unresolvable, and :func:`errors` refuses the value with a
``ValueError`` naming it (what a pydantic validator turns into a typed error).
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]
from referencing import Registry
from referencing.exceptions import Unresolvable


def validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema`` that resolves no reference outside it (see the module)."""
    return Draft202012Validator(schema, registry=Registry())


def errors(checker: Draft202012Validator, value: Any) -> list[ValidationError]:
    """Every way ``value`` breaks the schema; a reference the schema does not hold raises
    ``ValueError`` (the value cannot be checked, so it is not accepted)."""
    try:
        return list(checker.iter_errors(value))
    except Unresolvable as exc:
        ref = str(getattr(exc, "ref", exc))[:200]
        raise ValueError(f"the schema refers to `{ref}`, which is not in it "
                         "(references outside a schema are not followed)") from None
