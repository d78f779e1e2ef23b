"""The worker threads one identity's blocking calls run on: a few at once, its own.

A governed call blocks a worker thread for as long as its tool takes (a service that
answers late, an upstream that never answers before its timeout), and so do a workflow's
steps and a decision that resumes a run. Run on the pool every request of a process
shares (anyio's default: 40 threads at once), one identity's slow calls took it whole and
every other identity's call waited on them: 45 calls of a slow tool made another agent's
50 ms read wait 57 s (the MCP gateway, ``tests/security/test_270``) and held the JSON
API's other identities until they had ended (``serve``, ``tests/security/test_271``).

Now each identity's calls run under a limiter of its own, :data:`CALLS_PER_IDENTITY` at
once: its next call waits (a coroutine and the connection that carries it, no thread) for
one of its own to end, and no other identity waits on it. Those that wait are bounded too,
:data:`WAITING_PER_IDENTITY`: each holds its connection and its parsed request (up to
``max_bytes``), and only the process's open files bounded how many one identity could
queue; past them a call is refused at once (``quota_exceeded``, retry after a second:
429 on the JSON API, an error result on the MCP gateway), nothing of it run or journaled
(``tests/security/test_280``). The threads themselves come
from anyio's worker pool, which grows past the default limiter's 40: the shared limiter
stays whole for the routes that use it (the reads of ``serve``, the gateway's listing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, TypeVar

from ..errors import CradleError, QuotaExceededError

T = TypeVar("T")

#: an identity's blocking calls that run at once in one process (its next waits for one)
CALLS_PER_IDENTITY: Final = 8
#: an identity's calls that may wait for one of its threads (past them: refused at once)
WAITING_PER_IDENTITY: Final = 64


class IdentityThreads:
    """One ``anyio.CapacityLimiter`` of :data:`CALLS_PER_IDENTITY` per identity, made on the
    event loop the first time the identity calls (one per authenticated identity: the
    tokens of the home bound how many)."""

    def __init__(self, per_identity: int = CALLS_PER_IDENTITY, *,
                 waiting: int = WAITING_PER_IDENTITY,
                 refuse: Callable[[CradleError], Exception] | None = None) -> None:
        self.per_identity = per_identity
        self.waiting = waiting
        #: what a refused call raises (the JSON API's 429); the error itself when None
        self.refuse = refuse
        self._limiters: dict[str, Any] = {}  # identity -> its anyio.CapacityLimiter
        self._held: dict[str, int] = {}  # identity -> its calls running or waiting

    def limiter(self, identity: str) -> Any:
        import anyio  # the CLI's other commands do not pay for it

        held = self._limiters.get(identity)
        if held is None:
            held = self._limiters[identity] = anyio.CapacityLimiter(self.per_identity)
        return held

    @contextmanager
    def admitted(self, identity: str) -> Iterator[None]:
        """Count one call of ``identity`` for the block, or refuse it (raise) when its
        threads are busy and :attr:`waiting` of its calls wait already. Entered on the
        event loop only (one thread: the count needs no lock)."""
        held = self._held.get(identity, 0)
        if held >= self.per_identity + self.waiting:
            refused = QuotaExceededError(
                f"`{identity}` has {self.per_identity} calls running and {self.waiting} "
                "waiting in this process: no more are taken until one of them ends",
                hint="wait for an answer before sending more calls", retry_after=1,
                identity=identity, limit=self.per_identity + self.waiting)
            raise refused if self.refuse is None else self.refuse(refused)
        self._held[identity] = held + 1
        try:
            yield
        finally:
            left = self._held[identity] - 1
            if left:
                self._held[identity] = left
            else:
                del self._held[identity]

    async def run(self, identity: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker thread of ``identity``'s own (waiting for one, or
        refused past the calls that may wait: :meth:`admitted`)."""
        import anyio

        with self.admitted(identity):
            return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter(identity))


__all__ = ["CALLS_PER_IDENTITY", "WAITING_PER_IDENTITY", "IdentityThreads"]
