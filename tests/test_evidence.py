"""Evidence uploads and their hourly quotas per identity (``cradle_kg/evidence.py``): the
rule on its own (:func:`quota_refusal`), then :func:`upload` on a runtime with a clock of
its own — the window slides, nothing is written past a quota, on both journals. The
attack, on a real server, is ``tests/security/test_46``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.canonical import sha256_bytes
from cradle_kg.config import load_config, save_config
from cradle_kg.errors import QuotaExceededError
from cradle_kg.evidence import UPLOAD_WINDOW, quota_refusal, upload
from cradle_kg.inputs import InputLimits

from .conftest import Clock
from .security.server_times import age_server_times

pytestmark = pytest.mark.usefixtures("journal_backend")

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def limits(uploads: int | None = 3, most: int | None = 1000) -> InputLimits:
    return InputLimits(evidence_uploads_per_hour=uploads, evidence_bytes_per_hour=most)


def ago(minutes: float, size: int = 10) -> tuple[datetime, int]:
    return NOW - timedelta(minutes=minutes), size


def test_the_defaults_are_a_thousand_blobs_and_256_mib_an_hour() -> None:
    assert (InputLimits().evidence_uploads_per_hour,
            InputLimits().evidence_bytes_per_hour) == (1000, 256 * 1024 * 1024)
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        InputLimits(evidence_uploads_per_hour=-1)


def test_uploads_past_the_count_say_when_the_window_frees() -> None:
    assert quota_refusal([ago(1), ago(2)], limits(), by="a", size=10, now=NOW) is None
    refused = quota_refusal([ago(1), ago(2), ago(50)], limits(), by="a", size=10, now=NOW)
    assert isinstance(refused, QuotaExceededError) and refused.code == "quota_exceeded"
    assert refused.message == "`a` added 3 evidence blobs in the last hour: the limit is 3"
    assert refused.retry_after == 10 * 60  # the one of 50 minutes ago leaves in 10
    assert refused.hint is not None and "input_limits.evidence_uploads_per_hour" in refused.hint
    assert "2026-03-01T12:10:00Z" in refused.hint


def test_none_is_no_limit_and_zero_allows_none() -> None:
    many = [ago(i / 10) for i in range(50)]
    assert quota_refusal(many, limits(None, None), by="a", size=10**9, now=NOW) is None
    off = quota_refusal([], limits(0), by="a", size=1, now=NOW)
    assert off is not None and off.retry_after is None
    assert off.message == "evidence uploads are off in this home"
    no_bytes = quota_refusal([], limits(None, 0), by="a", size=1, now=NOW)
    assert no_bytes is not None and no_bytes.retry_after is None


def test_bytes_past_the_hour_wait_for_enough_of_the_oldest_to_leave() -> None:
    recent = [ago(5, 300), ago(20, 300), ago(40, 300)]  # newest first: 900 bytes
    assert quota_refusal(recent, limits(10), by="a", size=100, now=NOW) is None
    refused = quota_refusal(recent, limits(10), by="a", size=400, now=NOW)
    assert refused is not None and "would make 1300 bytes" in refused.message
    assert refused.retry_after == 20 * 60  # the 40-minute-old one is enough
    bigger = quota_refusal(recent, limits(10), by="a", size=1000, now=NOW)
    assert bigger is not None and bigger.retry_after == 55 * 60  # all three must leave
    never = quota_refusal([], limits(10), by="a", size=1001, now=NOW)
    assert never is not None and never.retry_after is None
    assert never.message == "`a`: 1001 bytes of evidence is more than the limit of 1000 bytes " \
                            "an hour"


@pytest.fixture
def limited(home: Path, clock: Clock) -> Iterator[Runtime]:
    config = load_config(home / "config.json")
    save_config(home / "config.json", config.model_copy(update={
        "input_limits": limits(2, 100)}))
    with Runtime(home, clock=clock) as rt:
        yield rt


def _upload(rt: Runtime, data: bytes, by: str = "agent:a") -> str:
    return upload(rt.context, rt.evidence, data, kind="document", source=None, by=by)


def test_the_window_slides_and_a_refusal_writes_nothing(limited: Runtime, clock: Clock) -> None:
    _upload(limited, b"one")
    clock.now += timedelta(minutes=30)
    # on PostgreSQL the hour is the server's (tests/security/test_607): it moves too
    age_server_times(limited, timedelta(minutes=30))
    _upload(limited, b"two")
    head = limited.journal.head()
    with pytest.raises(QuotaExceededError) as refused:
        _upload(limited, b"three")
    assert refused.value.retry_after == 30 * 60
    # nothing of the upload: the quota's one record of the hour alone (test_217)
    assert [e.kind for e in limited.journal.events(since_seq=head[0])] == ["quota.reached"]
    assert not limited.evidence.exists(sha256_bytes(b"three"))
    _upload(limited, b"three", by="agent:b")  # another identity's quota is its own
    clock.now += UPLOAD_WINDOW - timedelta(minutes=30)  # "one" has left the window
    age_server_times(limited, UPLOAD_WINDOW - timedelta(minutes=30))
    assert _upload(limited, b"three") == sha256_bytes(b"three")
    with pytest.raises(QuotaExceededError, match="the limit of 100"):
        _upload(limited, b"x" * 101, by="agent:c")


def test_every_blob_of_the_identity_counts_a_trusted_input_too(limited: Runtime) -> None:
    """The quota is the identity's blobs in the store, however they were added."""
    limited.record_input("run:t", "Pay the invoice.", author="agent:a")
    _upload(limited, b"one")
    with pytest.raises(QuotaExceededError, match="added 2 evidence blobs"):
        _upload(limited, b"two")
