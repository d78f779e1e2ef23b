"""The projector: one process keeping a graph store in step with the journal
(``cradle-kg graph follow``).

It waits for the journal to change (:meth:`Journal.wait_for_change`: on PostgreSQL a
``LISTEN`` woken by each append's ``NOTIFY``, on SQLite ``data_version`` read every
20 ms; at most ``interval`` seconds, then it polls the change watermark anyway) and, when
the watermark moved or the store is behind the head, runs the one catch-up loop
(:func:`.catchup.catch_up`) in batches. Each batch is one update request holding the
batch and its new watermark, so a projector killed at any instant — mid-batch included —
leaves the store at the end of its last batch; the next projector starts from the
store's own watermark: no gap, no duplicate. A stop request (SIGTERM, SIGINT) lets the
batch in flight finish, then the loop returns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import GraphStoreError
from ..storage import Journal
from ..storage.graph import FlushesInBackground, GraphStore
from .catchup import BATCH, catch_up_to
from .packproj import PackProjector


@dataclass(frozen=True)
class FollowStatus:
    """One progress report: where the store is, how far behind the journal's head."""

    projected: int  # the store's watermark
    head: int  # the journal's head when the report was made
    added: int  # events projected by this round
    seconds: float  # how long the round took
    #: how long the oldest event not yet projected has been waiting (0 when at the head)
    lag_seconds: float
    error: str | None = None  # a round that failed (the store unreachable): retried

    @property
    def lag(self) -> int:
        return max(0, self.head - self.projected)

    def to_dict(self) -> dict[str, object]:
        return {"projected": self.projected, "head": self.head, "lag": self.lag,
                "added": self.added, "seconds": round(self.seconds, 4),
                "lag_seconds": round(self.lag_seconds, 4), "error": self.error}


def follow(store: GraphStore, journal: Journal, *, stop: threading.Event,
           report: Callable[[FollowStatus], None],
           projectors: Sequence[PackProjector] = (), interval: float = 0.5,
           batch: int = BATCH, once: bool = False) -> int:
    """Keep ``store`` at the journal's head until ``stop`` is set (or, ``once``, until it
    is at the head); returns the events projected. A store that cannot be reached is
    reported and retried, backing off (``once``: raised); the journal stays the truth
    meanwhile."""
    if not once:  # watching from here: an append after this wakes the wait below
        journal.wait_for_change(0)
    if isinstance(store, FlushesInBackground):
        # the embedded store's memtable flushes (every ~100,000 quads) in a thread of
        # their own: the next batches are written meanwhile, not 0.6-1.9 s later under load
        store.flush_in_background()
    total = 0
    mark: int | None = None
    behind_since: float | None = None
    projected = -1
    failures = 0
    head: int | None = None  # the head read at the end of the previous round, if it was behind
    while not stop.is_set():
        # one read of the head a round: woken by an append, the store is behind it; the
        # change watermark is read only when the head says there is nothing new
        if head is None:
            head, _ = journal.head()
        due = projected < 0 or projected < head
        if not due:  # at the head: has the journal changed otherwise since the last look?
            now_mark = journal.watermark()
            due = mark is not None and now_mark != mark
            mark = now_mark
        else:
            mark = None  # not read: the next look at an idle journal only records it
        if due:
            started = time.monotonic()
            if head > max(projected, 0) and behind_since is None:
                behind_since = started
            try:
                added, projected = catch_up_to(
                    store, journal, projectors=projectors, batch=batch, head=head,
                    progress=_batch_report(report, store, journal, started, behind_since,
                                           batch))
            except GraphStoreError as exc:
                if once:  # asked to catch up once: a store that cannot be reached is said
                    raise
                report(FollowStatus(max(projected, 0), head, 0, time.monotonic() - started,
                                    _since(behind_since), error=exc.message))
                failures += 1  # retried, backing off up to 10 s between attempts
                head = None
                stop.wait(min(10.0, interval * 2 ** min(failures, 10)))
                continue
            failures = 0
            total += added
            head_now, _ = journal.head()
            lag_seconds = _since(behind_since)
            behind_since = None if projected >= head_now else behind_since
            if added or once:
                report(FollowStatus(projected, head_now, added, time.monotonic() - started,
                                    lag_seconds))
            if projected < head_now:
                head = head_now
                continue  # appended meanwhile: straight on
        head = None
        if once:
            break
        _wait(journal, stop, interval)
    return total


def install_retrying(journal: Journal, install: Callable[[], object], *,
                     stop: threading.Event, report: Callable[[FollowStatus], None],
                     interval: float = 0.5, once: bool = False) -> bool:
    """``install`` (the packs' knowledge graphs, before the first round) as :func:`follow`
    retries a round: a store that cannot be reached is reported and retried, backing off
    (``once``: raised). False if ``stop`` was set first."""
    failures = 0
    while not stop.is_set():
        try:
            install()
            return True
        except GraphStoreError as exc:
            if once:
                raise
            report(FollowStatus(0, journal.head()[0], 0, 0.0, 0.0, error=exc.message))
            failures += 1
            stop.wait(min(10.0, interval * 2 ** min(failures, 10)))
    return False


#: the longest one wait for the journal lasts: a stop request is seen within it
STOP_SLICE = 0.1


def _wait(journal: Journal, stop: threading.Event, interval: float) -> None:
    """Until the journal changes, ``stop`` is set, or ``interval`` seconds have passed."""
    deadline = time.monotonic() + interval
    while not stop.is_set():
        left = deadline - time.monotonic()
        if left <= 0 or journal.wait_for_change(min(left, STOP_SLICE)):
            return


def _since(t: float | None) -> float:
    return 0.0 if t is None else time.monotonic() - t


def _batch_report(report: Callable[[FollowStatus], None], store: GraphStore,
                  journal: Journal, started: float, behind_since: float | None,
                  batch: int) -> Callable[[int, int], None]:
    """Progress within a long catch-up: one report per batch (not for the last one)."""
    start: list[int] = []  # the watermark the round started from, read at the first report

    def progress(done: int, total: int) -> None:
        if done and done < total and done % batch == 0:
            if not start:  # the batch is applied: the watermark is start + done
                start.append(store.projected_seq() - done)
            report(FollowStatus(start[0] + done, start[0] + total, done,
                                time.monotonic() - started, _since(behind_since)))

    return progress


__all__ = ["FollowStatus", "follow", "install_retrying"]
