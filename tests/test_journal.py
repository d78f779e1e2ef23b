"""The journal: hash chain, tamper detection (property-tested), canonical hashing."""

from __future__ import annotations

import math
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cradle_kg.canonical import canonical_json, content_hash
from cradle_kg.storage import NewEvent
from cradle_kg.storage import SqliteJournal as Journal

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _fill(path: Path, n: int) -> Journal:
    j = Journal(path)
    for i in range(n):
        j.append([NewEvent(run_id=f"run:{i % 3}", kind="test.event", subject=f"s{i}",
                           actor="tester", at=T0, payload={"i": i, "text": "é" * (i % 4)})])
    return j


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text(max_size=6), json_values, max_size=6))
def test_canonical_hash_ignores_key_order(value: dict[str, Any]) -> None:
    reordered = dict(reversed(list(value.items())))
    assert content_hash(value) == content_hash(reordered)
    assert canonical_json(value) == canonical_json(reordered)


def test_canonical_refuses_nan() -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": math.nan})


def test_intact_chain(tmp_path: Path) -> None:
    j = _fill(tmp_path / "j.sqlite", 20)
    report = j.verify()
    assert report.intact and report.events == 20
    assert report.head_hash == j.head()[1]


TAMPERINGS = ["edit_payload", "edit_actor", "delete", "delete_last", "swap", "edit_hash"]


def _tamper(path: Path, how: str, seq: int, n: int) -> int:
    """Apply one tampering to the raw SQLite file; return the seq that must be named."""
    conn = sqlite3.connect(str(path))
    with conn:
        if how == "edit_payload":
            conn.execute("UPDATE events SET payload = ? WHERE seq = ?", ('{"i":-1}', seq))
        elif how == "edit_actor":
            conn.execute("UPDATE events SET actor = 'mallory' WHERE seq = ?", (seq,))
        elif how == "edit_hash":
            conn.execute("UPDATE events SET hash = ? WHERE seq = ?", ("sha256:" + "0" * 64, seq))
        elif how == "delete":
            conn.execute("DELETE FROM events WHERE seq = ?", (seq,))
            seq = seq + 1 if seq < n else seq
        elif how == "delete_last":
            conn.execute("DELETE FROM events WHERE seq = ?", (n,))
            seq = n
        elif how == "swap":
            other = seq + 1 if seq < n else seq - 1
            a, b = sorted((seq, other))
            cols = "run_id, kind, subject, actor, at, payload, payload_hash, prev_hash, hash"
            ra = conn.execute(f"SELECT {cols} FROM events WHERE seq = ?", (a,)).fetchone()
            rb = conn.execute(f"SELECT {cols} FROM events WHERE seq = ?", (b,)).fetchone()
            sets = ", ".join(f"{c.strip()} = ?" for c in cols.split(","))
            conn.execute(f"UPDATE events SET {sets} WHERE seq = ?", (*rb, a))
            conn.execute(f"UPDATE events SET {sets} WHERE seq = ?", (*ra, b))
            seq = a
    conn.close()
    return seq


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(how=st.sampled_from(TAMPERINGS), n=st.integers(2, 12), pick=st.integers(0, 10_000))
def test_any_single_tampering_is_caught_and_named(tmp_path_factory: pytest.TempPathFactory,
                                                  how: str, n: int, pick: int) -> None:
    path = tmp_path_factory.mktemp("tamper") / "j.sqlite"
    _fill(path, n).close()
    seq = pick % n + 1
    expected = _tamper(path, how, seq, n)
    report = Journal(path).verify()
    assert not report.intact
    assert report.broken_seq == expected, (how, seq, report)
    assert report.reason


def test_append_is_atomic(tmp_path: Path) -> None:
    j = _fill(tmp_path / "j.sqlite", 2)
    bad = NewEvent(run_id="r", kind="k", subject="s", actor="a", at=T0, payload={"x": math.nan})
    good = NewEvent(run_id="r", kind="k", subject="s", actor="a", at=T0, payload={})
    with pytest.raises(ValueError):
        j.append([good, bad])
    assert j.verify().events == 2
    assert j.verify().intact
