"""``cradle-kg pack init PACK --data DIR``: the data directory and the home's configuration.

The data directory often comes from elsewhere (a colleague, a download, an export), and
``pack init`` rewrites the home's ``config.json``. Findings:

* **a record written twice was loaded as its last copy.** The airline's ``users.json``,
  ``flights.json`` and ``reservations.json`` were read with ``json.loads``: a user listed
  twice (the second copy ``gold``), or a second ``membership`` key inside one record, was
  loaded silently as the last one — what a reviewer reads first is not what the rules
  decide on (a gold member gets free bags and compensation a regular one does not). ``NaN``
  and integers of any length were loaded too. They now go through the runtime's strict
  loader (:func:`cradle_kg.inputs.load_json_file`): one line naming the file and the key,
  exit 2, the home as it was.
* **a data file of any size was read whole.** A ``users.json`` of 200 MB (one 200 MB
  string in a field the rules never read) took the command to 900 MB of memory and put a
  200 MB customer record in the database; nothing bounded it. A file is now read only if
  it is a regular file of at most 64 MiB, a string at most 64 KiB (the runtime's input
  limits): the same file is refused at 65 MB of memory, before it is read.
* **``config.json`` was rewritten readable by everyone.** An operator keeps the home's
  configuration 0600 (it may hold the journal's PostgreSQL URL with its password, and the
  approvers' token hashes); ``pack init`` wrote it back through ``config.tmp`` with the
  process's umask: 0644 afterwards. It now keeps the file's mode, through a temporary
  file of its own created 0600 and synced before it takes the name.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from cradle_kg.packs.registry import BUILTIN_PACKS

from .inputcli import cli

FILES = ("users.json", "flights.json", "reservations.json")
#: a regular member in the benchmark's data
REGULAR = "lucas_hernandez_8985"


def _benchmark() -> Path:
    for base in (BUILTIN_PACKS.parent.parent, BUILTIN_PACKS.parent.parent.parent):
        found = base / "shared" / "data" / "tau-airline"
        if found.is_dir():
            return found
    raise AssertionError("the benchmark data (shared/data/tau-airline) is not beside the repo")


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for name in FILES:
        shutil.copyfile(_benchmark() / name, data / name)
    return data


def _init(home: Path, data: Path) -> tuple[int, str, str]:
    done = cli("pack", "init", "travel.airline", "--data", str(data), "--home", str(home))
    return done.returncode, done.stdout, done.stderr


def _digest(home: Path) -> dict[str, str]:
    """Every file of the home, by its bytes (the lock file is not state)."""
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file() and not p.name.endswith(".lock")}


@pytest.fixture(scope="module")
def loaded_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pack init`` from the benchmark's data, once for the module (a CLI process, ~1.5 s
    of CPU): the home holds no path of its own (its config and the airline database), so a
    copy of it is the same home."""
    home = tmp_path_factory.mktemp("airline-loaded") / "home"
    code, _out, err = _init(home, _benchmark())
    assert code == 0, err
    return home


@pytest.fixture
def loaded(loaded_once: Path, tmp_path: Path) -> Path:
    """A home loaded from the benchmark's data, as an operator has it before a bad re-init
    (a copy of the module's: each test's re-init must leave its own untouched)."""
    return Path(shutil.copytree(loaded_once, tmp_path / "home"))


def _user_twice(data: Path) -> None:
    """``users.json`` with the regular member listed again at the end, now ``gold``."""
    users = json.loads((data / "users.json").read_text(encoding="utf-8"))
    again = {**users[REGULAR], "membership": "gold"}
    text = (data / "users.json").read_text(encoding="utf-8").rstrip()
    (data / "users.json").write_text(text[:-1] + f", {json.dumps(REGULAR)}: "
                                     f"{json.dumps(again)}}}", encoding="utf-8")


def _key_twice(data: Path) -> None:
    """One record holding ``membership`` twice, the second ``gold``."""
    text = (data / "users.json").read_text(encoding="utf-8")
    start = text.index(json.dumps(REGULAR))
    end = text.index("\"payment_methods\"", start)
    member = text.index("\"membership\"", start)
    assert member > end  # the benchmark writes it after the payment methods
    cut = text.index(",", member) + 1
    (data / "users.json").write_text(text[:cut] + ' "membership": "gold",' + text[cut:],
                                     encoding="utf-8")


def _nan(data: Path) -> None:
    """``NaN`` in a field the rules never read (a customer's zip code)."""
    users = json.loads((data / "users.json").read_text(encoding="utf-8"))
    users[REGULAR]["address"]["zip"] = float("nan")
    (data / "users.json").write_text(json.dumps(users), encoding="utf-8")


def _long_digits(data: Path) -> None:
    text = (data / "reservations.json").read_text(encoding="utf-8")
    at = text.index("\"total_baggages\": ") + len("\"total_baggages\": ")
    end = text.index(",", at)
    (data / "reservations.json").write_text(text[:at] + "9" * 40 + text[end:],
                                            encoding="utf-8")


@pytest.mark.parametrize(("hostile", "word"), [
    (_user_twice, "duplicate key"), (_key_twice, "duplicate key `membership`"),
    (_nan, "NaN"), (_long_digits, "digits")])
def test_a_malformed_data_file_is_refused_and_the_home_is_as_it_was(
        loaded: Path, tmp_path: Path, hostile: object, word: str) -> None:
    data = _data(tmp_path)
    hostile(data)  # type: ignore[operator]
    before = _digest(loaded)
    code, out, err = _init(loaded, data)
    assert code == 2, (out, err)
    assert err.startswith("error: ") and word in err, err
    assert "Traceback" not in err and err.count("\n") <= 2, err
    assert _digest(loaded) == before  # the database and config.json untouched


def test_a_data_file_past_64_mib_is_refused_before_it_is_read(
        loaded: Path, tmp_path: Path) -> None:
    """Valid JSON in the benchmark's shape: one customer's address line of 70 MB."""
    data = _data(tmp_path)
    users = json.loads((data / "users.json").read_text(encoding="utf-8"))
    users[REGULAR]["address"]["address2"] = "x" * (70 * 1024 * 1024)
    (data / "users.json").write_text(json.dumps(users), encoding="utf-8")
    del users
    before = _digest(loaded)
    code, out, err = _init(loaded, data)
    assert code == 2, (out, err)
    assert err.startswith("error: ") and "more than the limit" in err, err
    assert _digest(loaded) == before


def test_init_keeps_config_json_unreadable_by_others(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = home / "config.json"
    config.write_text(json.dumps({"journal": "postgresql://cradle:s3cret@db.internal/cradle"}),
                      encoding="utf-8")
    os.chmod(config, 0o600)
    code, _out, err = _init(home, _benchmark())
    assert code == 0, err
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    written = json.loads(config.read_text(encoding="utf-8"))
    assert written["packs"] == ["travel.airline"]
    assert written["journal"] == "postgresql://cradle:s3cret@db.internal/cradle"
    assert [p.name for p in home.iterdir() if p.name.endswith(".tmp")] == []
