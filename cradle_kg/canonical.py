"""Canonical JSON and content hashes.

Every hash in cradle-kg is ``sha256:<hex>`` over canonical JSON: keys sorted, no
insignificant whitespace, UTF-8, datetimes as ISO-8601 UTC with a ``Z``. NaN and
infinities are refused: they have no JSON form and would make two equal records hash
differently on two machines.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import date, datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel

from .isotime import iso as iso
from .isotime import parse_iso as parse_iso

HASH_PREFIX = "sha256:"


def to_jsonable(value: Any) -> Any:
    """Turn pydantic models, datetimes, enums, tuples and sets into plain JSON values."""
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="json", exclude_none=False))
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"canonical json keys must be strings: got `{key!r}`")
            out[key] = to_jsonable(item)
        return out
    if isinstance(value, list | tuple):
        return [to_jsonable(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted(to_jsonable(item) for item in value)
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Enum):
        return to_jsonable(value.value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"canonical json cannot hold `{value}`")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"canonical json cannot hold a value of type `{type(value).__name__}`")


def _default(value: Any) -> Any:
    """What the C encoder cannot serialise itself: models, datetimes, sets."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, set | frozenset):
        return sorted(to_jsonable(item) for item in value)
    raise TypeError(f"canonical json cannot hold a value of type `{type(value).__name__}`")


#: one encoder for every call (``json.dumps`` builds one each time). No circular check: a
#: journaled value is a tree; a cycle still raises (``RecursionError``), only later
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                            allow_nan=False, default=_default, check_circular=False)


def canonical_json(value: Any) -> str:
    """The one serialisation every hash is computed over.

    The C encoder does the walking (sorted keys, no whitespace); ``_default`` handles the
    few Python types JSON lacks. NaN and infinities raise ``ValueError``.
    """
    return "".join(_ENCODER.iterencode(value, _one_shot=True))


def sha256_bytes(data: bytes) -> str:
    return HASH_PREFIX + hashlib.sha256(data).hexdigest()


def token_hash(token: str) -> str:
    """What is kept of a bearer or approver token: its ``sha256:<hex>``, never the token."""
    return sha256_bytes(token.encode("utf-8"))


def content_hash(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return sha256_bytes(canonical_json(value).encode("utf-8"))
