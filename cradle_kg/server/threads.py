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
one of its own to end, and no other identity waits on it. The threads themselves come
from anyio's worker pool, which grows past the default limiter's 40: the shared limiter
stays whole for the routes that use it (the reads of ``serve``, the gateway's listing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

T = TypeVar("T")

#: an identity's blocking calls that run at once in one process (its next waits for one)
CALLS_PER_IDENTITY: Final = 8


class IdentityThreads:
    """One ``anyio.CapacityLimiter`` of :data:`CALLS_PER_IDENTITY` per identity, made on the
    event loop the first time the identity calls (one per authenticated identity: the
    tokens of the home bound how many)."""

    def __init__(self, per_identity: int = CALLS_PER_IDENTITY) -> None:
        self.per_identity = per_identity
        self._limiters: dict[str, Any] = {}  # identity -> its anyio.CapacityLimiter

    def limiter(self, identity: str) -> Any:
        import anyio  # the CLI's other commands do not pay for it

        held = self._limiters.get(identity)
        if held is None:
            held = self._limiters[identity] = anyio.CapacityLimiter(self.per_identity)
        return held

    async def run(self, identity: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker thread of ``identity``'s own (waiting for one)."""
        import anyio

        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter(identity))


__all__ = ["CALLS_PER_IDENTITY", "IdentityThreads"]
