"""The chain walk both journals' ``audit verify`` share: one pass over the events in
``seq`` order (rows of :data:`COLUMNS`), checking every column (see
:mod:`.sqlite_verify` for the table of what each column is checked by)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..canonical import sha256_bytes
from .chain import GENESIS_HASH, Anchor, ChainReport, Progress, event_hash

PROGRESS_EVERY = 10_000

COLUMNS = ("seq, id, run_id, kind, subject, actor, at, payload, payload_hash, prev_hash, "
           "hash, idem_key")
_TEXT_COLUMNS = ("id", "run_id", "kind", "subject", "actor", "at", "payload", "payload_hash",
                 "prev_hash", "hash")


class ChainBroken(Exception):
    """The journal cannot vouch for anything; ``reason`` says why."""

    def __init__(self, reason: str, *, seq: int | None = None, event_id: str | None = None,
                 events: int = 0) -> None:
        super().__init__(reason)
        self.reason, self.seq, self.event_id, self.events = reason, seq, event_id, events



def walk(rows: Iterable[Sequence[Any]], head: Sequence[Sequence[Any]], anchor: Anchor | None,
          progress: Progress | None) -> ChainReport:
    announced = int(head[0][0]) if head and isinstance(head[0][0], int) else 0
    prev, count, anchored = GENESIS_HASH, 0, anchor is None
    for row in rows:
        count += 1
        problem = _row_problem(row, count, prev)
        if problem:
            event_id = row[1] if isinstance(row[1], str) else None
            seq = row[0] if isinstance(row[0], int) else count
            return ChainReport(False, count, prev, seq, event_id, problem)
        prev = row[10]
        if anchor is not None and not anchored:
            anchored = _at_anchor(anchor, row[0], row[10], row[1])
        if progress is not None and count % PROGRESS_EVERY == 0:
            progress(count, max(announced, count))
    if count == 0:
        raise ChainBroken("the journal has no events: its genesis event (seq 1) is missing"
                      + ("" if head else " and so is its head"), seq=1)
    if not head:
        raise ChainBroken(f"the journal's head is missing (the chain ends at seq {count})",
                      seq=count, events=count)
    head_seq, head_hash = head[0]
    if (head_seq, head_hash) != (count, prev):
        return ChainReport(
            False, count, prev, count + 1 if isinstance(head_seq, int) and head_seq > count
            else count, None,
            f"the head records seq {head_seq} but the chain ends at seq {count} "
            f"(`{prev}`): events were deleted from the end or the head was edited")
    if not anchored:
        assert anchor is not None
        return ChainReport(False, count, prev, anchor.seq, None, _not_contained(anchor, count))
    if progress is not None:
        progress(count, count)
    return ChainReport(True, count, prev)


def _not_contained(anchor: Anchor, count: int) -> str:
    where = f"seq {anchor.seq}" if anchor.seq is not None else "any seq"
    return (f"the journal does not contain the anchor `{anchor}` at {where} (it ends at seq "
            f"{count}): it was truncated, re-chained or replaced since the anchor was taken")


def anchor_problem(anchor: Anchor, marks: Iterable[tuple[int, str, str]]
                   ) -> tuple[int | None, str] | None:
    """Where and why a chain of (seq, hash, event id), in seq order, does not contain
    ``anchor`` (None: it does), as :func:`walk` says it: what strict replay checks of the
    journal it reproduces (``tests/security/test_525``)."""
    count = 0
    try:
        for seq, own, event_id in marks:
            count = seq
            if _at_anchor(anchor, seq, own, event_id):
                return None
    except ChainBroken as exc:
        return exc.seq, exc.reason
    return anchor.seq, _not_contained(anchor, count)


def _at_anchor(anchor: Anchor, seq: int, own: str, event_id: str) -> bool:
    if anchor.seq is None:
        return own == anchor.hash
    if seq != anchor.seq:
        return False
    if own != anchor.hash:
        raise ChainBroken(f"the event at seq {seq} does not carry the anchored hash "
                      f"`{anchor.hash}`: the journal was re-chained or replaced since the "
                      "anchor was taken", seq=seq, event_id=event_id, events=seq)
    return True


def _row_problem(row: Sequence[Any], expected_seq: int, prev: str) -> str | None:
    seq, event_id, run_id, kind, subject, actor, at, payload, payload_hash, prev_hash, own, \
        idem_key = row
    if seq != expected_seq:
        if expected_seq == 1:
            return f"the genesis event (seq 1) is missing: the chain starts at seq {seq}"
        return f"expected seq {expected_seq} here, found {seq}: an event is missing"
    for name, value in zip(_TEXT_COLUMNS, row[1:11], strict=True):
        if not isinstance(value, str):
            return f"column `{name}` holds a {type(value).__name__}, not text: the event " \
                   "was edited"
    if idem_key is not None and not isinstance(idem_key, str):
        return f"column `idem_key` holds a {type(idem_key).__name__}, not text: the event " \
               "was edited"
    if event_id != f"evt-{seq:010d}":
        return f"event id `{event_id}` does not match its position {seq}"
    if prev_hash != prev:
        return "prev_hash does not match the hash of the event before: reordered or removed"
    if sha256_bytes(payload.encode("utf-8")) != payload_hash:
        return "payload does not match its payload_hash: the payload was edited"
    recomputed = event_hash(
        seq=seq, event_id=event_id, run_id=run_id, kind=kind, subject=subject, actor=actor,
        at=at, payload_hash=payload_hash, prev_hash=prev_hash, idem_key=idem_key,
    )
    if recomputed != own:
        return "the event's hash does not match its fields: the event was edited"
    return None


__all__ = ["COLUMNS", "PROGRESS_EVERY", "ChainBroken", "walk"]
