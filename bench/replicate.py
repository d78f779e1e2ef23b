"""A big journal, fast: the real events of a runtime-filled home, appended again and again
through the journal's own ``append`` (so the hash chain, the idempotency claims and
every derived table are the journal's own work, and ``audit verify`` checks them), with
their identifiers made new for each copy.

The runtime fills a home at a few hundred events a second on this loaded machine (one
governed call at a time: a 1 M-event home would take about an hour); appending copies
in batches of 5,000 runs at thousands a second. Each copy ``k`` of a source event keeps
its kind, actor and payload, with

* ``run_id``, ``subject`` and the intent's idempotency key suffixed ``~k`` (so every run
  is a new run, every claim a new claim, and an outcome still closes its own intent);
* an approval's id suffixed ``~k`` (approval ids stay unique);
* its time moved into the span between the source's last event and the fill, in order
  (times never go backwards, and none is in the future).

Cached under ``bench/out/replicated-<n>`` (gitignored).
"""

from __future__ import annotations

import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from synthetic import OUT, build_events_home

from cradle_kg.records import AuditEvent
from cradle_kg.storage import NewEvent, SqliteJournal

BATCH = 5000


def _remap(event: AuditEvent, k: int, at: datetime, key: str | None) -> NewEvent:
    payload: dict[str, Any] = event.payload
    approval = payload.get("approval")
    if event.kind == "approval.requested" and isinstance(approval, dict) \
            and isinstance(approval.get("id"), str):
        payload = {**payload, "approval": {**approval, "id": f"{approval['id']}~{k}"}}
    return NewEvent(run_id=f"{event.run_id}~{k}", kind=event.kind,
                    subject=f"{event.subject}~{k}", actor=event.actor, at=at,
                    payload=payload, idem_key=None if key is None else f"{key}~{k}")


def build_replicated_home(min_events: int, *, seed: int = 100_000, log: bool = True) -> Path:
    """A home whose journal holds at least ``min_events`` events: the ``seed``-event
    runtime-filled home, then copies of its events (cached)."""
    home = OUT / f"replicated-{min_events}"
    if (home / ".complete").exists():
        return home
    source = build_events_home(seed, log=log)
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(source, home)
    started = time.perf_counter()
    with SqliteJournal(source / "journal.sqlite") as src, \
            SqliteJournal(home / "journal.sqlite") as journal:
        keys = src.claimed_keys()  # seq -> the idempotency key each intent claimed
        events = src.head()[0]
        first = next(iter(src.events())).at
        end = next(iter(src.events(since_seq=events - 1))).at
        copies = -(-(min_events - events) // events)
        span = max((end - first).total_seconds(), 1.0)
        room = max((datetime.now(UTC) - end).total_seconds(), 1.0) / copies
        k = 0
        while journal.head()[0] < min_events:
            k += 1
            batch: list[NewEvent] = []
            for event in src.events():
                offset = (event.at - first).total_seconds() / span
                at = end + (k - 1 + min(offset, 1.0)) * room * _SECOND
                batch.append(_remap(event, k, at, keys.get(event.seq)))
                if len(batch) == BATCH:
                    journal.append(batch)
                    batch = []
            if batch:
                journal.append(batch)
            if log:
                print(f"  copy {k}: {journal.head()[0]:,} events "
                      f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    (home / ".complete").write_text(f"{k} copies of {events} events, "
                                    f"{time.perf_counter() - started:.1f} s")
    return home


_SECOND = datetime(2000, 1, 1, 0, 0, 1) - datetime(2000, 1, 1)
