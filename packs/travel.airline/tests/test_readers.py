"""The read-only connections the rules and the verifiers read through are opened once per
thread and database file, and reused (per-call cost, issue 11): a reused one still reads
what was committed after it was opened, and a database file replaced at the same path is
never read through the old file's connection."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

from .conftest import Airline


def _reservation(db: Any, rid: str) -> dict[str, Any]:
    found = db.reservation(rid)
    assert found is not None
    return dict(found)


def test_one_reader_per_thread_and_file_reused(airline: Airline) -> None:
    db = airline.db
    with db.reading() as a, db.reading() as b:
        assert a is b
    other: list[Any] = []
    thread = threading.Thread(target=lambda: other.append(db.reading().__enter__()))
    thread.start()
    thread.join()
    with db.reading() as mine:
        assert other[0] is not mine  # a thread never shares its connection


def test_a_reused_reader_sees_what_is_committed_after_it_opened(airline: Airline) -> None:
    db = airline.db
    rid = "8B92J5"
    before = _reservation(db, rid)  # the reader is open from here on
    with db.writing() as conn:
        conn.execute("UPDATE reservations SET status = 'cancelled' WHERE reservation_id = ?",
                     (rid,))
    with db.reading() as conn:
        assert conn.execute("SELECT status FROM reservations WHERE reservation_id = ?",
                            (rid,)).fetchone()[0] == "cancelled"
    assert before.get("status") != "cancelled"


def test_a_replaced_file_gets_a_new_reader(airline: Airline, tmp_path: Path) -> None:
    db = airline.db
    with db.reading() as first:
        pass
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(db.path, copy)
    with db.writing() as conn:  # a change only the old file has
        conn.execute("DELETE FROM reservations WHERE reservation_id = '8B92J5'")
    assert db.reservation("8B92J5") is None
    db.path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(str(db.path) + suffix).unlink(missing_ok=True)
    shutil.copyfile(copy, db.path)  # another inode at the same path
    with db.reading() as second:
        assert second is not first
    assert db.reservation("8B92J5") is not None


def test_a_begin_left_open_by_a_caller_is_rolled_back(airline: Airline) -> None:
    db = airline.db
    with db.reading() as conn:
        conn.execute("BEGIN")
        conn.execute("SELECT 1 FROM reservations LIMIT 1").fetchone()
    with db.reading() as conn:
        assert not conn.in_transaction


def test_a_governed_write_is_verified_through_the_reused_reader(airline: Airline) -> None:
    """The validator and the verifier read through this thread's reused connection: a
    write is checked before it runs and its effect is read back after, as before."""
    owner, rid = "customer:aarav_lee_3563", "8B92J5"
    with airline.db.reading():
        pass  # the reader is open before the write
    for i in range(2):
        people = [{"first_name": f"Reuse{i}", "last_name": "Lee", "dob": "1980-01-01"}]
        airline.run({"tool": "update_reservation_passengers", "on_behalf_of": owner,
                     "arguments": {"reservation_id": rid, "passengers": people},
                     "facts": [("airline:confirmed", "yes")]}, status="executed")
        assert _reservation(airline.db, rid)["passengers"][0]["first_name"] == f"Reuse{i}"


def test_a_calls_changes_are_read_through_an_index(airline: Airline) -> None:
    """The verifier reads back the changes of one call by its key (every governed write):
    SQLite's plan searches an index, so the read does not grow with the changes the
    database has logged (a scan of every change was read on each write before)."""
    with airline.db.writing():
        pass  # a writing connection applies the schema, indexes included
    with airline.db.reading() as conn:
        plan = conn.execute("EXPLAIN QUERY PLAN SELECT kind, reservation_id, user_id, "
                            "payment_id, amount FROM changes WHERE idempotency_key = ? "
                            "ORDER BY n", ("k",)).fetchall()
    details = " ".join(str(row[-1]) for row in plan)
    assert "USING INDEX changes_key" in details and "TEMP B-TREE" not in details, details
