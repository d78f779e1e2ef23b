"""``pack init travel.airline --data DIR``: the data directory is not trusted. Every record
is checked field by field before anything is written; a record the rules or the API would
misread is one line naming the file, the record and the field, and the home — a new one, or
one whose database was loaded before — is left as it was."""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .test_pack_init import _data, invoke

Data = dict[str, dict[str, Any]]


@functools.cache
def _read(name: str) -> str:
    return (_data() / name).read_text()


def _subset() -> tuple[Data, Data, Data]:
    """Three customers of the benchmark, their reservations and the flights they fly (fresh
    objects on each call: the cases change them)."""
    users = json.loads(_read("users.json"))
    flights = json.loads(_read("flights.json"))
    reservations = json.loads(_read("reservations.json"))
    picked = [u for u in users.values() if u["reservations"]][:3]
    uids = {uid for uid, u in users.items() if any(u is p for p in picked)}
    res = {rid: r for rid, r in reservations.items() if r["user_id"] in uids}
    numbers = {f["flight_number"] for r in res.values() for f in r["flights"]}
    return ({uid: users[uid] for uid in uids},
            {n: f for n, f in flights.items() if n in numbers}, res)


def _first(records: Data) -> dict[str, Any]:
    return records[sorted(records)[0]]


def _available(flights: Data) -> dict[str, Any]:
    return next(d for f in flights.values() for d in f["dates"].values()
                if d["status"] == "available")


#: (file, what the change does, the change, words the error line must hold)
CASES: list[tuple[str, str, Callable[[Data, Data, Data], None], str]] = [
    ("users", "membership-not-a-tier",
     lambda u, f, r: _first(u).update(membership="platinum"), "`membership`"),
    ("users", "membership-an-object",
     lambda u, f, r: _first(u).update(membership={"tier": "gold"}), "`membership`"),
    ("users", "payment-source-unknown",
     lambda u, f, r: next(iter(_first(u)["payment_methods"].values())).update(source="cash"),
     ".source`"),
    ("users", "gift-card-amount-a-string",
     lambda u, f, r: _first(u)["payment_methods"].update(
         gift_card_1={"source": "gift_card", "amount": "500", "id": "gift_card_1"}),
     ".amount`"),
    ("users", "certificate-amount-infinite",
     lambda u, f, r: _first(u)["payment_methods"].update(
         certificate_1={"source": "certificate", "amount": float("inf"),
                        "id": "certificate_1"}), "`Infinity` is not a JSON number"),
    ("users", "user-id-with-nul",
     lambda u, f, r: u.update({"bad\u0000id": dict(_first(u))}), "(its id)"),
    ("users", "reservations-not-a-list",
     lambda u, f, r: _first(u).update(reservations="ABC123"), "`reservations`"),
    ("flights", "origin-a-list",
     lambda u, f, r: _first(f).update(origin=["JFK"]), "`origin`"),
    ("flights", "status-unknown",
     lambda u, f, r: next(iter(_first(f)["dates"].values())).update(status="boarding"),
     ".status`"),
    ("flights", "date-not-a-date",
     lambda u, f, r: _first(f)["dates"].update({"tomorrow": {"status": "cancelled"}}),
     "not a date"),
    ("flights", "seats-negative",
     lambda u, f, r: _available(f)["available_seats"].update(economy=-3),
     ".available_seats.economy`"),
    ("flights", "price-a-string",
     lambda u, f, r: _available(f)["prices"].update(business="cheap"), ".prices.business`"),
    ("flights", "number-differs-from-id",
     lambda u, f, r: _first(f).update(flight_number="HAT999"), "`flight_number`"),
    ("reservations", "cabin-unknown",
     lambda u, f, r: _first(r).update(cabin="first"), "`cabin`"),
    ("reservations", "trip-type-unknown",
     lambda u, f, r: _first(r).update(flight_type="multi_city"), "`flight_type`"),
    ("reservations", "insurance-a-boolean",
     lambda u, f, r: _first(r).update(insurance=True), "`insurance`"),
    ("reservations", "bags-a-string",
     lambda u, f, r: _first(r).update(total_baggages="2"), "`total_baggages`"),
    ("reservations", "bags-a-boolean",
     lambda u, f, r: _first(r).update(nonfree_baggages=True), "`nonfree_baggages`"),
    ("reservations", "more-nonfree-than-total",
     lambda u, f, r: _first(r).update(total_baggages=1, nonfree_baggages=2),
     "more than total_baggages"),
    ("reservations", "customer-unknown",
     lambda u, f, r: _first(r).update(user_id="nobody_0000"), "no user `nobody_0000`"),
    ("reservations", "created-at-not-a-time",
     lambda u, f, r: _first(r).update(created_at="last week"), "`created_at`"),
    ("reservations", "status-unknown",
     lambda u, f, r: _first(r).update(status="refunded"), "`status`"),
    ("reservations", "segment-date-a-number",
     lambda u, f, r: _first(r)["flights"][0].update(date=20240520), ".date`"),
    ("reservations", "passenger-name-null",
     lambda u, f, r: _first(r)["passengers"][0].update(first_name=None), ".first_name`"),
    ("reservations", "payment-amount-a-string",
     lambda u, f, r: _first(r)["payment_history"][0].update(amount="100"), ".amount`"),
]


def _write(folder: Path, users: Data, flights: Data, reservations: Data) -> None:
    folder.mkdir()
    for name, records in (("users", users), ("flights", flights),
                          ("reservations", reservations)):
        # allow_nan: a hostile file may hold what strict JSON cannot (Python's reader takes it)
        (folder / f"{name}.json").write_text(json.dumps(records, allow_nan=True))


def _db_digest(home: Path) -> str:
    db = home / "travel-airline" / "airline.sqlite"
    with sqlite3.connect(db) as conn:
        rows = [conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
                for t in ("users", "flights", "reservations", "meta")]
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def test_the_benchmarks_subset_is_accepted(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _write(data, *_subset())
    code, out = invoke("pack", "init", "travel.airline", "--data", str(data), "--home",
                       str(tmp_path / "h"))
    assert code == 0, out


@pytest.mark.parametrize(("file", "case", "change", "words"), CASES,
                         ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_a_bad_record_is_one_line_and_leaves_the_home_as_it_was(
        tmp_path: Path, file: str, case: str, change: Callable[[Data, Data, Data], None],
        words: str) -> None:
    refused_and_home_kept(tmp_path, file, lambda u, f, r: change(u, f, r) or words)


def _subset_home(base: Path) -> Path:
    """A home made by ``pack init`` from the benchmark's subset, once a test process (in
    pytest's base folder, ``base``): it holds no path of its own (config.json and the
    airline database, no journal), so each test's copy of it is the same home."""
    home = base / "airline-subset-home"
    if not home.is_dir():
        good, made = base / "airline-subset-data", base / "airline-subset-home.new"
        shutil.rmtree(good, ignore_errors=True)
        shutil.rmtree(made, ignore_errors=True)
        _write(good, *_subset())
        code, out = invoke("pack", "init", "travel.airline", "--data", str(good), "--home",
                           str(made))
        assert code == 0, out  # the benchmark's records are accepted
        made.rename(home)
    return home


def refused_and_home_kept(tmp_path: Path, file: str,
                          change: Callable[[Data, Data, Data], str]) -> None:
    """A home made by ``pack init`` from the benchmark's subset (a copy); the subset changed by
    ``change`` (which returns words the refusal must say): ``pack init`` again is one
    ``error:`` line naming ``<file>.json`` and those words, exit 2, and the home's
    configuration and database are as they were."""
    home = tmp_path / "h"
    shutil.copytree(_subset_home(tmp_path.parent), home)
    config, before = (home / "config.json").read_text(), _db_digest(home)
    users, flights, reservations = _subset()
    words = change(users, flights, reservations)
    data = tmp_path / "data"
    _write(data, users, flights, reservations)
    code, out = invoke("pack", "init", "travel.airline", "--data", str(data), "--home",
                       str(home))
    assert code == 2, out
    first = out.splitlines()[0]
    assert first.startswith("error: ") and f"{file}.json" in first and words in first, out
    assert "Traceback" not in out and "\x00" not in out
    assert (home / "config.json").read_text() == config
    assert _db_digest(home) == before  # the database loaded before is untouched


def test_json_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    deep = "[" * 200_000 + "]" * 200_000
    (data / "users.json").write_text('{"u": {"payment_methods": {}, "reservations": [], '
                                     f'"x": {deep}}}}}')
    (data / "flights.json").write_text("{}")
    (data / "reservations.json").write_text("{}")
    code, out = invoke("pack", "init", "travel.airline", "--data", str(data), "--home",
                       str(tmp_path / "h"))
    assert code == 2 and out.startswith("error: ") and "nested too deep" in out, out
    assert not (tmp_path / "h" / "travel-airline" / "airline.sqlite").exists()
