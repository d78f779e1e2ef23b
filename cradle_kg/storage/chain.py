"""The hash chain: what a journal holds and how each event's hash is made.

Shared by the writer (:mod:`.store`) and the independent reader (:mod:`.verify`), which
must agree on it byte for byte and must not depend on each other to do so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import encode_basestring as _json_str  # the C escaper json.dumps uses

from ..canonical import content_hash, sha256_bytes
from ..errors import InputError
from . import sqlite_derived as derived

GENESIS_HASH = "sha256:" + "0" * 64
#: ``PRAGMA user_version`` of a journal this code writes; format 2 hashes ``idem_key``,
#: format 3 (same events, same hashes) adds the derived tables of :mod:`.derived`,
#: format 4 adds ``run_state``, format 5 the running totals of ``usage``, format 6 its
#: budget spend buckets (``budget.*``: model calls' charges), format 7 ``human_tasks``,
#: ``undecided_approvals``, ``open_steps``, ``repairs`` and ``budget_sets`` (:mod:`.tasks_sql`),
#: format 8 the indexes ``events_subject_outcome`` (an action's recorded outcome in one
#: probe) and ``events_outcome`` (a proposal's, as PostgreSQL's migration 4 has it),
#: format 9 ``journal_keys`` (the digest key of secret arguments, outside the chain: an
#: older cradle-kg, which would digest them unkeyed, refuses the journal), format 10
#: ``approval_exclusions`` (who may never decide each approval: what an approver's inbox
#: leaves out, as PostgreSQL's migration 12 has it), format 11 ``starting_runs`` (the
#: workflow runs on their way to their first human step, counted in their agent's
#: ``waiting_per_agent``, as PostgreSQL's migration 13 has it), format 12
#: ``unrun_approvals`` (the approvals asked under a key, approved and not run yet, as
#: PostgreSQL's migration 14 has it), format 13 the index ``events_subject_decided`` (an
#: action's decisions: what a use's guard reads for its approval's revoke, past every
#: other run's request of the action, as PostgreSQL's migration 17 has it), format 14
#: ``lineage_written`` (the values executed actions carried on untrusted content only,
#: journal-wide: what a trusted read of a later run is not the origin of, as PostgreSQL's
#: migration 18 has it)
JOURNAL_FORMAT = 14
#: formats this code upgrades in place: their events are hashed as this one's are
UPGRADABLE_FORMATS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)
#: the table (and its indexes) format 14 adds: only the runtime's lineage reads it (a
#: command that only reads never does)
_WRITTEN = frozenset({"lineage_written", "lineage_written_value", "lineage_written_first"})
#: older formats a command that only reads reads as they are, never upgrading them, with
#: what they lack of this format's schema: format 13 (the previous release) is format 14
#: without ``lineage_written``, format 12 without the index ``events_subject_decided``
#: too, which only makes reads faster (``tests/security/test_375``); ``audit verify``
#: compares the derived tables they have
READ_AS_IS_FORMATS: dict[int, frozenset[str]] = {
    12: frozenset({"events_subject_decided"}) | _WRITTEN, 13: _WRITTEN}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    run_id       TEXT NOT NULL,
    kind         TEXT NOT NULL,
    subject      TEXT NOT NULL,
    actor        TEXT NOT NULL,
    at           TEXT NOT NULL,
    payload      TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    prev_hash    TEXT NOT NULL,
    hash         TEXT NOT NULL,
    idem_key     TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS events_idem_key ON events(idem_key) WHERE idem_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_run ON events(run_id, seq);
CREATE INDEX IF NOT EXISTS events_subject ON events(subject, seq);
CREATE INDEX IF NOT EXISTS events_kind_actor ON events(kind, actor, at);
CREATE INDEX IF NOT EXISTS events_subject_outcome ON events(subject, seq)
    WHERE kind = 'run.outcome';
CREATE INDEX IF NOT EXISTS events_outcome
    ON events(run_id, json_extract(payload, '$.outcome.proposal_id'), seq)
    WHERE kind = 'run.outcome';
CREATE INDEX IF NOT EXISTS events_subject_decided ON events(subject, seq)
    WHERE kind = 'approval.decided';
CREATE TABLE IF NOT EXISTS head (
    one  INTEGER PRIMARY KEY CHECK (one = 1),
    seq  INTEGER NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS journal_keys (
    name TEXT PRIMARY KEY,
    key  BLOB NOT NULL
);
"""
#: a progress callback: (events checked so far, events the head announces)
Progress = Callable[[int, int], None]
#: a journal's seq as an anchor writes it: ASCII decimal, a 64-bit integer at most
_SEQ_RE = re.compile(r"[0-9]{1,19}")
_HASH_RE = re.compile(r"sha256:[0-9a-f]{64}")

SCHEMA_STATEMENTS = (*(s.strip() for s in _SCHEMA.split(";") if s.strip()),
                     *derived.SCHEMA_STATEMENTS)


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What ``audit verify`` found."""

    intact: bool
    events: int
    head_hash: str
    broken_seq: int | None = None
    broken_id: str | None = None
    reason: str | None = None
    #: set when the chain is sound but the events break one of
    #: :data:`.invariants.INVARIANTS` (its name)
    invariant: str | None = None


def event_hash(*, seq: int, event_id: str, run_id: str, kind: str, subject: str,
               actor: str, at: str, payload_hash: str, prev_hash: str,
               idem_key: str | None) -> str:
    """The hash of one event: every column the runtime reads, ``idem_key`` (even NULL) too.

    The content hash of the header's canonical JSON, written here key by key in canonical
    order (the same text :func:`~cradle_kg.canonical.canonical_json` writes for that dict,
    byte for byte: ``tests/storage/test_event_hash.py``) — every append and every
    ``audit verify`` hashes each event once, and the general encoder costs 3x this."""
    if type(seq) is int and all(type(v) is str for v in (
            event_id, run_id, kind, subject, actor, at, payload_hash, prev_hash)) and (
            idem_key is None or type(idem_key) is str):
        text = (f'{{"actor":{_json_str(actor)},"at":{_json_str(at)},"id":{_json_str(event_id)},'
                f'"idem_key":{"null" if idem_key is None else _json_str(idem_key)},'
                f'"kind":{_json_str(kind)},"payload_hash":{_json_str(payload_hash)},'
                f'"prev_hash":{_json_str(prev_hash)},"run_id":{_json_str(run_id)},'
                f'"seq":{seq},"subject":{_json_str(subject)}}}')
        return sha256_bytes(text.encode("utf-8"))
    return content_hash(
        {
            "seq": seq,
            "idem_key": idem_key,
            "id": event_id,
            "run_id": run_id,
            "kind": kind,
            "subject": subject,
            "actor": actor,
            "at": at,
            "payload_hash": payload_hash,
            "prev_hash": prev_hash,
        }
    )


def hash_parts(*, run_id: str, kind: str, subject: str, actor: str, at: str,
               payload_hash: str, idem_key: str | None) -> tuple[bytes, bytes, bytes, bytes]:
    """The text :func:`event_hash` hashes, UTF-8, less what the head decides: the four
    pieces around the event's id, its ``prev_hash`` and its seq. The hash is
    ``sha256(pre + b'"' + id + b'"' + mid + b'"' + prev_hash + b'"' + post + seq + tail)``
    (seq in decimal) — what the PostgreSQL journal's ``cradle_append`` computes under its
    lock from these pieces (:mod:`.pg_append`), byte for byte the text above
    (``tests/storage/test_event_hash.py``)."""
    idem = "null" if idem_key is None else _json_str(idem_key)
    return (f'{{"actor":{_json_str(actor)},"at":{_json_str(at)},"id":'.encode(),
            f',"idem_key":{idem},"kind":{_json_str(kind)},'
            f'"payload_hash":{_json_str(payload_hash)},"prev_hash":'.encode(),
            f',"run_id":{_json_str(run_id)},"seq":'.encode(),
            f',"subject":{_json_str(subject)}}}'.encode())


@dataclass(frozen=True, slots=True)
class Anchor:
    """A head kept elsewhere by the operator: ``seq:sha256:<hex>`` or ``sha256:<hex>``."""

    hash: str
    seq: int | None = None

    @classmethod
    def parse(cls, text: str) -> Anchor:
        value = text.strip()
        seq: int | None = None
        head, sep, rest = value.partition(":")
        if sep and _SEQ_RE.fullmatch(head):  # not isdigit: `²` and 5,000 digits `int` refuses
            seq, value = int(head), rest
            if not 1 <= seq < 2 ** 63:
                raise InputError(f"anchor `{text}`: the sequence number must be 1 or more, "
                                 "a 64-bit integer")
        if not _HASH_RE.fullmatch(value):
            raise InputError(f"anchor `{text}` is not `sha256:<64 hex>` or `<seq>:sha256:<64 hex>`",
                             hint="`cradle-kg audit anchor` prints one")
        return cls(hash=value, seq=seq)

    def __str__(self) -> str:
        return self.hash if self.seq is None else f"{self.seq}:{self.hash}"
