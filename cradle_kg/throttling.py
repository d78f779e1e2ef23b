"""The journal's record that an identity is being throttled by a quota.

A call refused by a quota — an agent's refused proposals of the hour
(``input_limits.refusals_per_agent_per_hour``), what may wait for a person on its behalf
(``waiting_per_agent``), an identity's evidence uploads of the hour
(``evidence_uploads_per_hour``, ``evidence_bytes_per_hour``) — is not journaled: writing
it would make the quota a flood vector of its own. Before, nothing at all was written, and
an auditor reading the journal could not tell that an agent had been throttled
(``tests/security/test_217``).

Now the first refusal by a quota in an hour writes one ``quota.reached`` event (in the
runtime's own run :data:`QUOTA_RUN`: the quota, the identity, its limit) — at most one per
quota and identity in any hour, however many calls it refuses, as a mature rate limiter
logs the first time a key is limited and then counts. The bound is a usage bucket of its
own (``quota.<name>``, the identity: derived from these events in the append's
transaction and compared by ``audit verify``, :mod:`.storage.counting`), read first
outside the writer's lock (two index probes: a refused call in a flood writes nothing and
takes no lock) and again under it with the append (:class:`~.storage.UsageCap` of one):
two writers recording at once write one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from .errors import QuotaExceededError
from .records import RUNTIME_ACTOR
from .storage import Journal, LimitReached, NewEvent, UsageCap

QUOTA_REACHED = "quota.reached"
#: the runtime's own run its quota records are journaled in (no agent's, no workflow's)
QUOTA_RUN = "quotas"
#: a quota and an identity are recorded at most once in any such window
RECORD_WINDOW = timedelta(hours=1)
#: the usage scope of a quota's records: ``quota.<its key in input_limits>``
SCOPE_PREFIX = "quota."


def record_reached(journal: Journal, append: Callable[[list[NewEvent]], Any],
                   refused: QuotaExceededError, *, now: datetime) -> None:
    """Journal that ``refused.identity`` reached ``refused.quota``, unless it was recorded
    in the last :data:`RECORD_WINDOW` already (then nothing is written). A refusal that
    names no quota or identity records nothing."""
    quota, identity = refused.quota, refused.identity
    if quota is None or identity is None:
        return
    since = now - RECORD_WINDOW
    scope = SCOPE_PREFIX + quota
    recorded, _ = journal.usage_since(field=scope, value=identity, since=since)
    if recorded:
        return
    event = NewEvent(run_id=QUOTA_RUN, kind=QUOTA_REACHED, subject=f"{scope}:{identity}",
                     actor=RUNTIME_ACTOR, at=now,
                     payload={"quota": quota, "identity": identity, "limit": refused.limit,
                              "message": str(refused)[:500]},
                     caps=(UsageCap(scope, identity, since=since, max_calls=1),))
    try:
        append([event])
    except LimitReached:  # another writer recorded it in this window first
        return


__all__ = ["QUOTA_REACHED", "QUOTA_RUN", "RECORD_WINDOW", "SCOPE_PREFIX", "record_reached"]
