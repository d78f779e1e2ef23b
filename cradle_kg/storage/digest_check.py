"""``audit verify``: the journal's digest key still makes the digests of its secret actions.

The digest key (:meth:`.journal.Journal.digest_key`) lives beside the chain, so the chain
cannot say it changed. The decisions about a tool with secret arguments name them
(``secret_arguments``) and journal the action and its digest: each digest must be the
action's, keyed under the stored key — or unkeyed, as a journal written before secrets
were keyed holds. A digest neither makes means the key was replaced or lost (a restore
without ``journal_keys``, an edited row): the next identical call would get another
idempotency key and run again, and a person's refusal of it would no longer hold.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ..redaction import action_digest, secret_names
from .journal import DIGEST_KEY_BYTES

#: the decisions that may hold a keyed digest (a superset: the payload is checked below)
SECRET_DECISIONS_SQL: Final = (
    "SELECT seq, payload FROM events WHERE kind = 'decision.made' "
    "AND payload LIKE '%\"secret_arguments\"%' ORDER BY seq")
#: the stored key (parameterless: both drivers run it as written)
STORED_KEY_SQL: Final = "SELECT key FROM journal_keys WHERE name = 'digest'"


def secret_decision(payload: Mapping[str, Any]
                    ) -> tuple[frozenset[str], dict[str, Any], str] | None:
    """A ``decision.made`` payload about a tool with secret arguments: their names, the
    action as journaled and the digest the decision made (None: not such a decision)."""
    names = secret_names(payload)
    action, decision = payload.get("action"), payload.get("decision")
    if not names or not isinstance(action, dict) or not isinstance(decision, dict):
        return None
    made = (decision.get("provenance") or {}).get("input_hash")
    return (names, action, made) if isinstance(made, str) else None


def unkeyed(payload: Mapping[str, Any]) -> bool:
    """Whether a decision digested its action's secret arguments unkeyed (a journal
    written before secrets were keyed)."""
    found = secret_decision(payload)
    return found is not None and found[2] == action_digest(found[1])


def stored_key_problem(value: object) -> str | None:
    """Why a stored digest key is not one the runtime writes (its
    :data:`~.journal.DIGEST_KEY_BYTES` random bytes), or None. The column is a SQLite
    ``BLOB``, which keeps any type: ``bytes(value)`` of a text raised, and of an integer
    allocated that many bytes (``tests/security/test_296``)."""
    if isinstance(value, bytes | bytearray | memoryview) and len(value) == DIGEST_KEY_BYTES:
        return None
    what = (f"{len(value)} bytes" if isinstance(value, bytes | bytearray | memoryview)
            else f"a value of type {type(value).__name__}")
    return (f"the journal's digest key (`journal_keys`) is {what}, not the "
            f"{DIGEST_KEY_BYTES} random bytes the runtime writes: it was replaced")


def key_problem(rows: Iterable[tuple[Any, Any]], key: bytes | None) -> str | None:
    """Why the stored ``key`` does not make a secret action's journaled digest, or None.

    ``rows``: (seq, payload text) of :data:`SECRET_DECISIONS_SQL`."""
    for seq, text in rows:
        try:
            decoded = json.loads(text)
        except RecursionError:  # SQLite's JSON reads 2,000 levels, Python's fewer
            return (f"the payload of the decision at seq {seq} is nested deeper than this "
                    "process decodes: nothing the runtime writes nests that deep "
                    "(tests/security/test_294)")
        except ValueError:
            return f"the payload of the decision at seq {seq} is not JSON"
        found = secret_decision(decoded) if isinstance(decoded, dict) else None
        if found is None:
            continue
        names, action, made = found
        if made == action_digest(action):  # made before keys
            continue
        if key is not None and made == action_digest(action, secrets=names, key=key):
            continue
        return (f"the digest of the secret action decided at seq {seq} is not made with the "
                "journal's digest key: the key (`journal_keys`) was replaced or lost")
    return None


__all__ = ["SECRET_DECISIONS_SQL", "STORED_KEY_SQL", "key_problem", "secret_decision",
           "stored_key_problem", "unkeyed"]
