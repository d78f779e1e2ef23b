"""Cedar's ``context.evidence_count`` counts evidence, not the references a proposal names.

Finding (eleventh attack review): a policy can ask for evidence two ways — the annotation
``@requires_evidence("2")`` (gate 1's evidence check: each cited blob must be in the
store, journaled as collected and fresh) or a condition on ``context.evidence_count``
(``permit … when { context.evidence_count >= 2 }``, as ``test_27`` checks). The
annotation's check held, but ``context.evidence_count`` was the number of distinct
references the proposal *names*: an agent citing two made-up hashes
(``sha256:111…``, ``sha256:222…``), nothing uploaded, had the policy permit and the call
executed unattended; two blobs past the freshness limit ran it too.

Now ``context.evidence_count`` is the number of the cited blobs gate 1's evidence check
would take — in the store, journaled as collected, fresh — read once a proposal for both.
Two real fresh documents still permit (``test_27``); a reference to nothing counts for
nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg.records import OutcomeStatus

from .test_27_evidence_counting import _call, _executions, _runtime

pytestmark = pytest.mark.usefixtures("journal_backend")

MADE_UP = ["sha256:" + "1" * 64, "sha256:" + "2" * 64]


def test_made_up_references_are_no_evidence_count(home: Path) -> None:
    rt = _runtime(home)
    try:
        out = rt.submit(_call("p-made-up", "test.counted", MADE_UP))
        # before: executed, the policy read `evidence_count` 2
        assert out.status is OutcomeStatus.DENIED, out.reasons
        stored_only = rt.evidence.put(b"in the store, never journaled as collected")
        real = rt.add_evidence(b"the invoice", kind="document", collector="user:alice")
        out = rt.submit(_call("p-half", "test.counted", [real, stored_only]))
        assert out.status is OutcomeStatus.DENIED, out.reasons
        assert _executions(rt) == 0
        other = rt.add_evidence(b"the receipt", kind="document", collector="user:alice")
        assert rt.submit(_call("p-two", "test.counted", [real, other])).status \
            is OutcomeStatus.EXECUTED
    finally:
        rt.close()


def test_stale_documents_are_no_evidence_count(home: Path) -> None:
    later = [timedelta(0)]
    rt = _runtime(home, clock=lambda: datetime.now(UTC) + later[0])
    try:
        old = [rt.add_evidence(b"an old invoice", kind="document", collector="user:alice"),
               rt.add_evidence(b"an old receipt", kind="document", collector="user:alice")]
        later[0] = timedelta(seconds=rt.config.evidence_max_age_seconds + 60)
        out = rt.submit(_call("p-stale", "test.counted", old))
        assert out.status is OutcomeStatus.DENIED, out.reasons  # before: executed
        assert _executions(rt) == 0
    finally:
        rt.close()
