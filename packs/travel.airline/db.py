"""The airline's database: a SQLite file in the home (``<home>/travel-airline/airline.sqlite``).

The schema is the pack's. Users, flights and reservations are kept as the benchmark's JSON
documents (so what a tool returns is byte for byte what the benchmark's API returns), with
the columns the rules and the queries select on beside them. ``meta`` holds the domain
clock; ``applied`` holds, per idempotency key, what each write answered (the lookup that
reconciles after a crash, and the verifier's record); ``changes`` is the airline's own log
of what each write changed (payments, refunds, certificates); ``replaced``, the segments
each executed change of flights took off its reservation (what it held before).

Writes go through :meth:`AirlineDB.writing` (one transaction, on disk when it returns); every
read — the rules, the verifiers — goes through a separate read-only connection, opened once
per thread and database file and reused (:meth:`PackStore.reading`): opening one costs more
than the questions a rule or a verifier asks of it.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from cradle_kg.packs.sdk import InputError, PackContext, PackStore, load_json_file

from .datacheck import check_data

#: EST as the policy writes it: a fixed offset, UTC-5
EST = timezone(timedelta(hours=-5), "EST")
#: the policy's clock ("The current time is 2024-05-15 15:00:00 EST.")
DEFAULT_NOW = datetime(2024, 5, 15, 15, 0, 0, tzinfo=EST)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users (
    user_id    TEXT PRIMARY KEY,
    membership TEXT NOT NULL,
    doc        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS flights (
    flight_number TEXT PRIMARY KEY,
    origin        TEXT NOT NULL,
    destination   TEXT NOT NULL,
    doc           TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS reservations (
    reservation_id TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL,
    status         TEXT,
    doc            TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS reservations_user ON reservations(user_id);
CREATE TABLE IF NOT EXISTS applied (
    idempotency_key TEXT PRIMARY KEY,
    tool            TEXT NOT NULL,
    ok              INTEGER NOT NULL,
    output          TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS changes (
    n               INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT NOT NULL,
    tool            TEXT NOT NULL,
    kind            TEXT NOT NULL,   -- reservation | payment | refund | certificate
    reservation_id  TEXT,
    user_id         TEXT,
    payment_id      TEXT,
    amount          REAL
);
-- the verifier reads a call's changes by its key: an index, not a scan of every change made
CREATE INDEX IF NOT EXISTS changes_key ON changes(idempotency_key, n);
-- the segments an executed change of flights took off a reservation, as the reservation
-- held them, written in the change's own transaction (beside its `applied` answer): the
-- database keeps only the flights a reservation holds now (`tests/security/test_581`)
CREATE TABLE IF NOT EXISTS replaced (
    reservation_id  TEXT NOT NULL,
    flight_number   TEXT NOT NULL,
    date            TEXT NOT NULL,
    idempotency_key TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS replaced_reservation ON replaced(reservation_id);
CREATE INDEX IF NOT EXISTS replaced_key ON replaced(idempotency_key);
"""

SOURCE = "travel-airline/airline.sqlite"
FILES = ("users.json", "flights.json", "reservations.json")


def default_data() -> Path:
    """The benchmark's data, read where it is shared (never copied into the repo):
    ``$AIRLINE_DATA``, else ``shared/data/tau-airline`` beside the repository (or one level
    further up, for a worktree)."""

    if os.environ.get("AIRLINE_DATA"):
        return Path(os.environ["AIRLINE_DATA"])
    repo = Path(__file__).resolve().parents[2]
    for base in (repo.parent, repo.parent.parent):
        if (base / "shared" / "data" / "tau-airline").is_dir():
            return base / "shared" / "data" / "tau-airline"
    return repo.parent / "shared" / "data" / "tau-airline"


def db_path(home: Path) -> Path:
    return home / "travel-airline" / "airline.sqlite"


class AirlineDB:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = PackStore(path, SCHEMA)

    @classmethod
    def of(cls, ctx: PackContext) -> AirlineDB:
        """The database of ``ctx``'s home: one object per home and process (it holds only
        its path; :class:`PackStore` opens a connection per write and keeps one reader per
        thread), not built again by the validator, the tool and the verifier of each call."""
        return _of_home(ctx.home)

    # --- writes -------------------------------------------------------------------

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        with self.store.writing() as conn:
            yield conn

    def load(self, folder: Path, now: datetime) -> dict[str, int]:
        """Replace the whole database with a directory in the benchmark's format."""
        docs = read_data_dir(folder)
        users, flights, reservations = docs
        with self.writing() as conn:
            for table in ("users", "flights", "reservations", "applied", "changes", "replaced",
                          "meta"):
                conn.execute(f"DELETE FROM {table}")  # fixed names
            conn.executemany("INSERT INTO users VALUES (?,?,?)", [
                (uid, str(u.get("membership", "regular")), json.dumps(u))
                for uid, u in users.items()])
            conn.executemany("INSERT INTO flights VALUES (?,?,?,?)", [
                (num, str(f["origin"]), str(f["destination"]), json.dumps(f))
                for num, f in flights.items()])
            conn.executemany("INSERT INTO reservations VALUES (?,?,?,?)", [
                (rid, str(r["user_id"]), r.get("status"), json.dumps(r))
                for rid, r in reservations.items()])
            conn.execute("INSERT INTO meta VALUES ('now', ?)", (now.isoformat(),))
            conn.execute("INSERT INTO meta VALUES ('source', ?)", (str(folder),))
        return {"users": len(users), "flights": len(flights), "reservations": len(reservations)}

    # --- reads (a read-only connection of their own) ----------------------------

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The store's read-only connection of this thread (:meth:`PackStore.reading`)."""
        with self.store.reading() as conn:
            if conn is None:
                raise InputError(f"no airline database at `{self.path}`",
                                 hint="run `cradle-kg pack init travel.airline --data DIR`")
            yield conn

    def now(self) -> datetime:
        with self.reading() as conn:
            return Reader(conn).now()

    def applied(self, key: str) -> tuple[bool, str] | None:
        with self.reading() as conn:
            return Reader(conn).applied(key)

    def changes(self, key: str) -> list[dict[str, Any]]:
        with self.reading() as conn:
            return Reader(conn).changes(key)

    def reservation(self, rid: str) -> dict[str, Any] | None:
        with self.reading() as conn:
            return Reader(conn).reservation(rid)

    def user(self, uid: str) -> dict[str, Any] | None:
        with self.reading() as conn:
            return Reader(conn).user(uid)


@functools.lru_cache(maxsize=64)
def _of_home(home: Path) -> AirlineDB:
    return AirlineDB(db_path(home))


class Reader:
    """Reads over one (read-only) connection: a verifier or a rule opens one, not one per
    question — on a loaded disk each connection costs."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(sql, params).fetchone()
        return row

    def now(self) -> datetime:
        row = self._one("SELECT value FROM meta WHERE key = 'now'")
        return DEFAULT_NOW if row is None else datetime.fromisoformat(str(row[0]))

    def applied(self, key: str) -> tuple[bool, str] | None:
        row = self._one("SELECT ok, output FROM applied WHERE idempotency_key = ?", (key,))
        return None if row is None else (bool(row[0]), str(row[1]))

    def changes(self, key: str) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT kind, reservation_id, user_id, payment_id, amount "
                                 "FROM changes WHERE idempotency_key = ? ORDER BY n", (key,))
        return [dict(zip(("kind", "reservation_id", "user_id", "payment_id", "amount"), r,
                         strict=True)) for r in rows]

    def replaced_by(self, key: str) -> list[dict[str, str]]:
        """The segments the change of flights under ``key`` took off its reservation."""
        return [{"reservation_id": r, "flight_number": n, "date": d}
                for r, n, d in replaced_rows(self.conn, "idempotency_key", key)]

    def reservation(self, rid: str) -> dict[str, Any] | None:
        row = self._one("SELECT doc FROM reservations WHERE reservation_id = ?", (rid,))
        return None if row is None else dict(json.loads(row[0]))

    def user(self, uid: str) -> dict[str, Any] | None:
        row = self._one("SELECT doc FROM users WHERE user_id = ?", (uid,))
        return None if row is None else dict(json.loads(row[0]))


def replaced_rows(conn: sqlite3.Connection, column: str, value: str,
                  ) -> list[tuple[str, str, str]]:
    """(reservation, flight number, date) of the ``replaced`` rows whose ``column``
    (``reservation_id``, indexed, or ``idempotency_key``) is ``value``, each of a write the
    API accepted (its ``applied`` answer, in the same transaction, is ``ok``). A database
    made before the table existed has none until its next write applies the schema."""
    if column not in ("reservation_id", "idempotency_key"):
        raise ValueError(column)
    try:
        rows = conn.execute(
            "SELECT r.reservation_id, r.flight_number, r.date FROM replaced AS r "
            "JOIN applied AS a ON a.idempotency_key = r.idempotency_key AND a.ok = 1 "
            f"WHERE r.{column} = ? ORDER BY r.rowid", (value,)).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table: replaced" in str(exc):
            return []
        raise
    return [(str(r), str(n), str(d)) for r, n, d in rows]


def read_data_dir(folder: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The three JSON files of a benchmark data directory, each a mapping of id → object;
    a missing file or a wrong shape is one clear error naming the file."""
    if not folder.is_dir():
        raise InputError(f"`{folder}`: not a directory",
                         hint="pass the folder holding " + ", ".join(f"`{f}`" for f in FILES))
    out: list[dict[str, Any]] = []
    for name in FILES:
        path = folder / name
        if not path.is_file():
            raise InputError(f"`{folder}`: no `{name}` in this folder",
                             hint="a data directory holds " + ", ".join(f"`{f}`" for f in FILES))
        # strict: a key written twice (a user listed twice, a second `membership`) is
        # refused, never "the last one wins"; NaN, over-long strings and files past 64 MiB too
        raw = load_json_file(path)
        if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
            raise InputError(f"`{path}`: expected an object of id → object")
        out.append(raw)
    users, flights, reservations = out
    for uid, u in users.items():
        if not isinstance(u.get("payment_methods"), dict) or not isinstance(
                u.get("reservations"), list):
            raise InputError(f"`{folder / 'users.json'}`: user `{uid}` has no "
                             "`payment_methods` object or `reservations` list")
    for num, f in flights.items():
        if not all(k in f for k in ("origin", "destination", "dates")):
            raise InputError(f"`{folder / 'flights.json'}`: flight `{num}` lacks `origin`, "
                             "`destination` or `dates`")
    for rid, r in reservations.items():
        if not all(k in r for k in ("user_id", "flights", "passengers", "payment_history")):
            raise InputError(f"`{folder / 'reservations.json'}`: reservation `{rid}` lacks "
                             "`user_id`, `flights`, `passengers` or `payment_history`")
    check_data(folder, users, flights, reservations)
    return users, flights, reservations
