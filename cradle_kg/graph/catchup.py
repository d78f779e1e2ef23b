"""The one catch-up loop: journal → projection → graph store.

The runtime (:meth:`Runtime.sync_graph`), the CLI (``graph sync``, ``query``, ``export``,
``validate``), the server (its private store) and the projector (``graph follow``) all
bring a :class:`~cradle_kg.storage.graph.GraphStore` up to the journal with
:func:`catch_up`, and recreate one with :func:`rebuild`. The store is a projection,
never the truth: it records the last journal ``seq`` it has projected (the watermark).

# INVARIANT: each batch — the net effect of its events' inserts and retractions in journal
#   order (:class:`~cradle_kg.storage.graph.QuadBatch`), then the watermark — is one
#   ``GraphStore.apply``: the watermark never moves ahead of the content, and a batch
#   replayed after a kill changes nothing but what the kill left undone (set operations).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..crashpoints import crashpoint
from ..errors import GraphLayoutError, GraphResponseError, GraphWatermarkError
from ..records import AuditEvent
from ..storage import Journal
from ..storage.graph import (
    PROJECTION_VERSION,
    SHARED_GRAPH,
    JournalBound,
    Progress,
    ProjectionTarget,
    QuadBatch,
)
from .packproj import PackProjector
from .project import event_quads, event_retractions, project_event, run_graph

#: events per batch (one update request each)
BATCH = 5_000
_SHARED = f"<{SHARED_GRAPH}>"


def event_ops(ev: AuditEvent, batch: QuadBatch,
              projectors: Sequence[PackProjector] = ()) -> None:
    """Add one event to ``batch``: its quads, then what it retracts."""
    graph = run_graph(ev.run_id)
    triples, shared = event_quads(ev, projectors=projectors)
    batch.add(graph, triples)
    batch.add(_SHARED, shared)
    batch.remove(graph, event_retractions(ev))


def catch_up(store: ProjectionTarget, journal: Journal, *, projectors: Sequence[PackProjector] = (),
             batch: int = BATCH, progress: Progress | None = None,
             limit: int | None = None) -> int:
    """Project every event after the store's watermark (at most ``limit``); returns how
    many were projected. A store written with another layout is rebuilt."""
    return catch_up_to(store, journal, projectors=projectors, batch=batch, progress=progress,
                       limit=limit)[0]


def catch_up_to(store: ProjectionTarget, journal: Journal, *,
                projectors: Sequence[PackProjector] = (), batch: int = BATCH,
                progress: Progress | None = None, limit: int | None = None,
                head: int | None = None) -> tuple[int, int]:
    """:func:`catch_up`, returning (events projected, the store's watermark after them).
    ``head``: the journal's head as the caller has just read it (for ``progress`` only:
    the events read are those after the watermark, whatever the head)."""
    start = store.projected_seq()
    if head is None:  # read after the watermark (the head only grows)
        head, _ = journal.head()
    if start > head:  # the caller's head may be older than the watermark: read again
        check_watermark(start, journal)
    unbound = check_journal(store, journal)  # read only: a refused store is not written
    layout = store.layout() if start else PROJECTION_VERSION
    if layout > PROJECTION_VERSION:
        # a newer cradle-kg writes this store: rebuilt down to this layout on each round,
        # and back up by the other, it flapped for ever (tests/security/test_81)
        raise GraphLayoutError(
            f"the graph store was written with projection layout {layout}, newer than "
            f"this cradle-kg's ({PROJECTION_VERSION}): nothing was projected",
            hint="project with the newer cradle-kg, or give this one a store of its own "
                 "(`cradle-kg graph rebuild` takes the store back to this layout)")
    if layout != PROJECTION_VERSION:
        # written by an older cradle-kg: its triples are laid out otherwise; the watermark
        # goes with the clear, so a kill half-way leaves a store projected again from 0
        done = rebuild(store, journal, projectors=projectors, progress=progress)
        after = store.projected_seq()
        if store.layout() != PROJECTION_VERSION:
            # a store that does not keep what it is sent: rebuilt again on every round
            raise GraphResponseError(
                "the graph store did not keep the projection layout its rebuild wrote "
                f"(it still says {store.layout()}): is it read-only, or written by "
                "something else?")
        return done, after
    if unbound is not None:  # before the first batch: named the journal it projects
        assert isinstance(store, JournalBound)
        store.bind_journal(unbound)
    done = last = 0
    ops = QuadBatch()
    for ev in journal.events(since_seq=start):
        event_ops(ev, ops, projectors)
        done += 1
        last = ev.seq
        if done % batch == 0:
            store.apply(ops, last)
            ops = QuadBatch()
            crashpoint("graph.sync.batch")
            if progress:
                progress(last - start, head - start)
        if limit is not None and done >= limit:
            break
    if done % batch:  # an event without triples still moves the watermark
        store.apply(ops, last)
        crashpoint("graph.sync.batch")
    if progress:
        progress(max(last, start) - start, max(head, last) - start)
    return done, max(last, start)


def check_watermark(seq: int, journal: Journal) -> None:
    """Refuse a store whose watermark ``seq`` is past the journal's head (read now: the
    watermark was read first, and the head only grows) — a store that holds another
    journal's projection (another home configured with the same store, a journal restored
    from an older backup) or whose meta graph someone else wrote. Catching up from it
    skipped every event up to ``seq`` for good, silently (tests/security/test_80)."""
    head, _ = journal.head()
    if seq > head:
        raise GraphWatermarkError(
            f"the graph store says it holds the journal's projection up to event {seq}, "
            f"but the journal ends at {head}: it holds another journal's projection (or "
            "something else wrote its watermark); nothing was projected",
            hint="give this home a store (or a dataset) of its own, or `cradle-kg graph "
                 "rebuild` to project this journal into it again")


def journal_identity(journal: Journal) -> str | None:
    """The hash of the journal's first event (None: the journal is empty)."""
    return journal.first_hash()  # its hash column: no event decoded


def check_journal(store: ProjectionTarget, journal: Journal) -> str | None:
    """Refuse a store that records another journal than ``journal`` (its first event's
    hash); returns the identity to record when the store records none (it is bound to
    ``journal`` before anything is projected), else None.
    A store holding another journal's projection up to a watermark *behind* this
    journal's head was caught up from that watermark: every event before it skipped, for
    good (tests/security/test_80)."""
    if not isinstance(store, JournalBound):
        return None
    mine = journal_identity(journal)
    if mine is None:
        return None
    theirs = store.journal_identity()
    if theirs is None:
        return mine
    if theirs != mine:
        raise GraphWatermarkError(
            f"the graph store holds the projection of another journal (its first event "
            f"{theirs[:23]}…, this journal's {mine[:23]}…): nothing was projected",
            hint="give this home a store (or a dataset) of its own, or `cradle-kg graph "
                 "rebuild` to project this journal into it again")
    return None


def rebuild(store: ProjectionTarget, journal: Journal, *, projectors: Sequence[PackProjector] = (),
            progress: Progress | None = None) -> int:
    """Drop the projection in ``store`` and project the whole journal again (bulk);
    the watermark is written last. Returns the events projected."""
    head, _ = journal.head()
    retractions: list[str] = []
    state = {"count": 0, "last": 0}

    def chunks() -> Iterator[str]:
        chunk: list[str] = []
        for ev in journal.events():
            chunk.extend(project_event(ev, projectors))
            graph = run_graph(ev.run_id)
            retractions.extend(f"GRAPH {graph} {{ {t} }}" for t in event_retractions(ev))
            state["count"] += 1
            state["last"] = ev.seq
            if len(chunk) >= 200_000:
                yield "".join(chunk)
                chunk.clear()
                if progress:
                    progress(ev.seq, head)
        if chunk:
            yield "".join(chunk)

    # the retractions are complete once the chunks are consumed, before they are applied
    store.replace_all(chunks(), retractions, lambda: state["last"])
    # bound after: a rebuild killed before this names the journal before, and is refused
    mine = journal_identity(journal)
    if mine is not None and isinstance(store, JournalBound):
        store.bind_journal(mine)
    if progress:
        progress(head, head)
    return state["count"]


__all__ = ["BATCH", "catch_up", "catch_up_to", "check_journal", "check_watermark", "event_ops",
           "journal_identity", "rebuild"]
