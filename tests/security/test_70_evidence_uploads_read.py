"""What gate 1's evidence check reads does not grow with the uploads of a blob.

Finding: a tool that requires evidence (``requires_evidence``, or a policy's obligation)
has gate 1 ask when each cited blob was collected (``Runtime._evidence_collected_at``),
and that read and decoded *every* event about the blob's ref — one ``evidence.collected``
per upload, and a blob is content-addressed, so uploading the same bytes again journals
another event under the same subject. An agent's token uploads (``POST /api/evidence``,
``cradle-kg evidence add``; 1,000 uploads an hour per identity by default, 24,000 a day,
and every identity's uploads of that blob count): after N uploads, every submission
citing the blob — by anyone, under the server's lock — decoded N rows for it, and a
proposal may cite 256 blobs. Measured here: a submission citing the blob decoded 15
event rows at 10 uploads, 64 at 60 — linear, without bound (now 6 and 5).

Now the check reads the newest ``evidence.collected`` of the ref only
(``Journal.last_for_subject``: the newest end of ``events_subject (subject, seq)``, one row
decoded), on both journals; the newest upload still decides freshness, as before. Counted
as the event rows the journal decodes (not time: the machine is shared).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.records import OutcomeStatus
from tests.conftest import make_config, proposal, register_test_tools

#: every test here runs on both journals (tests/journal_backends.py)
pytestmark = pytest.mark.usefixtures("journal_backend")


def _cite(pid: str, ref: str) -> dict[str, Any]:
    return proposal(pid, "test.evidence", {}, agent="agent:tester", target="test:1",
                    evidence_refs=[ref])


def test_a_blob_uploaded_many_times_costs_a_submission_one_row(
        home: Path, decoded: Callable[[], int]) -> None:
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        register_test_tools(rt)
        rows = []
        for pid, uploads in (("p-few", 10), ("p-many", 50)):
            for _ in range(uploads):
                ref = rt.add_evidence(b"the invoice", kind="document", collector="user:alice")
            before = decoded()
            out = rt.submit(_cite(pid, ref))
            rows.append(decoded() - before)
            assert out.status is OutcomeStatus.EXECUTED, out.reasons
        # before: 15 rows at 10 uploads, 64 at 60 (now 6 and 5)
        assert rows[1] <= rows[0] <= 6, rows


def test_the_newest_upload_still_decides_freshness(home: Path) -> None:
    past = datetime.now(UTC) - timedelta(days=30)
    with Runtime(home, config=make_config(), clock=lambda: past) as old:
        ref = old.add_evidence(b"old page", kind="ticket", collector="user:alice")
    with Runtime(home, config=make_config(), graph_sync=False) as rt:
        register_test_tools(rt)
        stale = rt.submit(_cite("p-stale", ref))
        assert stale.status is OutcomeStatus.NEEDS_CLARIFICATION
        assert "older than the freshness limit" in " ".join(stale.reasons)
        assert rt.add_evidence(b"old page", kind="ticket", collector="user:alice") == ref
        assert rt.submit(_cite("p-fresh", ref)).status is OutcomeStatus.EXECUTED
