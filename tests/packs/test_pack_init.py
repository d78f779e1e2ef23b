"""``cradle-kg pack init``: a pack's ``init:`` hook prepares the home, then the home enables
the pack — changed only after the hook succeeded; clear one-line errors otherwise."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cradle_kg import Runtime
from cradle_kg.cli import app
from cradle_kg.errors import ManifestError
from cradle_kg.packs import load_pack
from cradle_kg.packs.registry import BUILTIN_PACKS

AIRLINE = BUILTIN_PACKS / "travel.airline"


def _data() -> Path:
    for base in (BUILTIN_PACKS.parent.parent, BUILTIN_PACKS.parent.parent.parent):
        found = base / "shared" / "data" / "tau-airline"
        if found.is_dir():
            return found
    raise AssertionError("the benchmark data (shared/data/tau-airline) is not beside the repo")


def invoke(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(app, list(args))
    return done.exit_code, done.output


def test_init_loads_the_data_and_enables_the_pack(tmp_path: Path) -> None:
    home = tmp_path / "h"
    code, out = invoke("pack", "init", "travel.airline", "--data", str(_data()),
                       "--home", str(home))
    assert code == 0, out
    assert json.loads(out)["agents"] == ["agent:airline-assistant"]
    config = json.loads((home / "config.json").read_text())
    assert config["packs"] == ["travel.airline"]
    with Runtime(home) as rt:  # the home's own config: the pack is loaded
        assert rt.tools.has("airline.cancel_reservation")
        assert "travel.airline@1.0.0" in rt.pack_versions
    code, out = invoke("tools", "list", "--format", "json", "--home", str(home))
    assert code == 0 and "airline.book_reservation" in out
    # again: the identities are merged by id, the pack listed once
    code, out = invoke("pack", "init", "travel.airline", "--data", str(_data()),
                       "--now", "2024-05-16T09:00:00-05:00", "--home", str(home))
    assert code == 0, out
    again = json.loads((home / "config.json").read_text())
    assert again["packs"] == ["travel.airline"] and len(again["agents"]) == 1


@pytest.mark.parametrize("problem", ["missing", "no-reservations", "bad-json", "no-data"])
def test_a_bad_data_dir_is_one_line_and_leaves_the_home_as_it_was(
        tmp_path: Path, problem: str) -> None:
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.json").write_text('{"packs": []}')
    data = tmp_path / "data"
    if problem != "missing":
        data.mkdir()
        for name in ("users.json", "flights.json", "reservations.json"):
            shutil.copyfile(_data() / name, data / name) if name == "users.json" else (
                data / name).write_text("{}")
        if problem == "no-reservations":
            (data / "reservations.json").unlink()
        if problem == "bad-json":
            (data / "flights.json").write_text("{not json")
    args = ["pack", "init", "travel.airline", "--home", str(home)]
    if problem != "no-data":
        args += ["--data", str(data)]
    code, out = invoke(*args)
    assert code == 2, out
    assert out.startswith("error: "), out
    assert {"missing": "no such data directory", "no-reservations": "no `reservations.json`",
            "bad-json": "not valid JSON", "no-data": "needs `--data DIR`"}[problem] in out
    assert json.loads((home / "config.json").read_text()) == {"packs": []}
    assert not (home / "travel-airline" / "airline.sqlite").exists()


def test_bad_clock_and_a_pack_without_a_hook(tmp_path: Path) -> None:
    code, out = invoke("pack", "init", "travel.airline", "--data", str(_data()), "--now",
                       "yesterday", "--home", str(tmp_path / "h"))
    assert code == 2 and "not an ISO-8601 date-time" in out
    code, out = invoke("pack", "init", "demo.ledger", "--home", str(tmp_path / "h"))
    assert code == 2 and "declares no `init` hook" in out
    assert not (tmp_path / "h" / "config.json").exists()


def test_the_manifest_entry_is_checked(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "manifest.yaml").write_text("id: x.y\nname: x\nversion: 1.0.0\n"
                                          "core_ontology: '>=0.1.0'\ninit: not an entry\n")
    with pytest.raises(ManifestError, match="not a `module:attribute` entry"):
        load_pack(folder)


def test_the_airline_manifest_names_its_hook() -> None:
    assert load_pack(AIRLINE).manifest.init == "setup:init"


def test_the_airline_pack_validates_without_running_its_code() -> None:
    from cradle_kg.packs.validate import validate_pack

    report = validate_pack(AIRLINE, reasoner=False)
    assert report.ok, report.errors
    assert not report.warnings, report.warnings
