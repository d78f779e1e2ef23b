"""The loop's context: the one way anything writes to the journal.

Every stage of the loop — and whatever else records something: plans, the workflow
engine, autonomy and budget changes — appends through :meth:`LoopContext.append`, so
every written event reaches the same listeners (the integrity checker's cache, a replay's
comparison, a test's probe) in the order it was written. Besides the writer, the context
carries what the stages read at the moment they act: the clock (every reading the loop
takes is journaled), the worker lease (written into every intent), the configuration in
force (identities, permissions, approvers, limits).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from ..config import RuntimeConfig
from ..records import AuditEvent
from ..storage import IdempotencyKeyTaken, Journal, Lease, NewEvent

Clock = Callable[[], datetime]
#: called with the events just written, in the order they were written
AppendListener = Callable[[Sequence[AuditEvent]], None]
#: the journal keys the first submission of a proposal id claims (gate 1's submission check)
PROPOSAL_CLAIM_PREFIX = "proposal:"


class ProposalIdClaimed(Exception):
    """Another submission claimed this proposal id in its run first: evaluate it again."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class LoopContext:
    """The journal's one writer, with the clock, the lease and the configuration in force."""

    def __init__(self, journal: Journal, *, config: RuntimeConfig, clock: Clock,
                 lease: Lease) -> None:
        self.journal = journal
        self.config = config
        self.clock = clock
        self.lease = lease
        self.listeners: list[AppendListener] = []

    def append(self, events: Sequence[NewEvent]) -> list[AuditEvent]:
        """Write ``events`` in one transaction, then tell every listener.

        Raises :class:`ProposalIdClaimed` when a proposal id's claim was taken first, and
        :class:`~cradle_kg.storage.IdempotencyKeyTaken` for any other key already held.
        """
        try:
            written = self.journal.append(events)
        except IdempotencyKeyTaken as taken:
            if taken.key.startswith(PROPOSAL_CLAIM_PREFIX):
                raise ProposalIdClaimed(taken.key) from taken
            raise
        for listener in self.listeners:
            listener(written)
        return written
