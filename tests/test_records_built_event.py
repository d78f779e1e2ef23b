"""``built_event`` builds the very :class:`AuditEvent` ``model_construct`` builds (the
journal's append and the commit check build one per event), and refuses a missing or an
unknown field rather than leave it unset."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from cradle_kg.records import AuditEvent, built_event

VALUES: dict[str, Any] = dict(
    seq=3, id="evt-0000000003", run_id="run:r", kind="run.outcome", subject="act:x",
    actor="runtime", at=datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
    payload={"outcome": {"status": "executed"}}, payload_hash="sha256:" + "a" * 64,
    prev_hash="sha256:" + "b" * 64, hash="sha256:" + "c" * 64)


def test_the_same_event_as_model_construct() -> None:
    built, constructed = built_event(**VALUES), AuditEvent.model_construct(**VALUES)
    assert type(built) is AuditEvent
    assert built == constructed
    assert built.model_fields_set == constructed.model_fields_set
    assert built.model_dump(mode="json") == constructed.model_dump(mode="json")
    assert built.model_dump_json() == constructed.model_dump_json()
    assert AuditEvent.model_validate(built.model_dump()) == built
    with pytest.raises(Exception, match="frozen"):
        built.seq = 4  # type: ignore[misc]


@pytest.mark.parametrize("change", [{"hash": None}, {"extra": 1}])
def test_every_field_and_no_other(change: dict[str, Any]) -> None:
    values = {k: v for k, v in {**VALUES, **change}.items() if v is not None}
    with pytest.raises(AssertionError):
        built_event(**values)
