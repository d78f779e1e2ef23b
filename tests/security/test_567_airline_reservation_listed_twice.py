"""``pack init travel.airline --data DIR``: a customer's list names each reservation once.

Finding (twenty-sixth review, the airline pack against ``wiki.md``): "the agent can offer a
certificate as a gesture … with the amount being $100 times the number of passengers" — one
per reservation concerned (S5, ``airline_compensation_repeated``), counted on the
reservations the customer's record lists. ``test_149`` made the list name the customer's own
reservations only, but not each once: a ``users.json`` in which ``isabella_garcia_4633``
(silver; ``MHH4XU``, one passenger, a cancelled flight) lists ``MHH4XU`` twice was loaded,
and one complaint of a cancelled flight was paid twice — the second $100 certificate
executed where the benchmark's own list gives one (``assert 0 == 2``: the directory was
loaded; on it the second certificate executed).

Now such a directory is one ``error:`` line naming the file, the record and the field
(``reservation `MHH4XU` is listed twice``), exit 2, and the home as it was. The benchmark's
own lists name each reservation once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.packs.test_airline_data_checks import refused_and_home_kept
from tests.packs.test_pack_init import _data, invoke

Data = dict[str, dict[str, Any]]


def _listed_twice(users: Data, flights: Data, reservations: Data) -> str:
    first = users[sorted(users)[0]]
    first["reservations"].append(first["reservations"][0])
    return "listed twice"


def test_a_reservation_listed_twice_is_one_line_and_leaves_the_home(tmp_path: Path) -> None:
    refused_and_home_kept(tmp_path, "users", _listed_twice)


def test_one_complaint_is_not_paid_twice(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(_data(), data)
    users = json.loads((data / "users.json").read_text(encoding="utf-8"))
    users["isabella_garcia_4633"]["reservations"].append("MHH4XU")
    (data / "users.json").write_text(json.dumps(users), encoding="utf-8")
    home = tmp_path / "home"
    code, out = invoke("pack", "init", "travel.airline", "--data", str(data), "--home",
                       str(home))
    assert code == 2, out
    first = out.splitlines()[0]
    assert "users.json" in first and "record `isabella_garcia_4633`" in first, out
    assert "`MHH4XU` is listed twice" in first, out
    assert not (home / "travel-airline" / "airline.sqlite").exists()
