"""Attack review (a journal handed to an auditor): which journal ``audit verify`` read.

A home's ``config.json`` may name a PostgreSQL journal (``"journal"``), and ``audit verify
--home`` then verifies that database, not the home's ``journal.sqlite``. Handed a home,
an auditor ran ``audit verify --home`` and was told ``intact: N events, head …`` about a
database the home's author chose (their own server; a libpq password in the auditor's
environment is offered to it), while the ``journal.sqlite`` beside it, edited, was never
opened: nothing in the verdict said so. Now the verdict names the journal it read
whenever it is not the home's own file, and where it was named (``config.json`` or
``$CRADLE_JOURNAL_URL``), the password left out; ``--format json`` gives ``journal``
always.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from tests.inprocess import run_cli
from tests.security.handed import handed_home
from tests.security.homes import credit, opened_demo_home


def test_a_journal_named_by_the_homes_config_is_named_in_the_verdict(
        tmp_path_factory: pytest.TempPathFactory, pg_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = opened_demo_home(tmp_path_factory, "t295-author", embedded=True)
    monkeypatch.setenv(JOURNAL_URL_ENV, pg_url)
    with Runtime(elsewhere) as rt:  # the author's clean journal, on their server
        assert rt.submit(credit("p-clean")).status.value == "executed"
    monkeypatch.delenv(JOURNAL_URL_ENV)

    home = handed_home(tmp_path_factory, "t295")
    conn = sqlite3.connect(home / "journal.sqlite")
    conn.execute("UPDATE events SET payload = '{}' WHERE seq = 3")  # the file, edited
    conn.commit()
    conn.close()
    config = home / "config.json"
    save_config(config, load_config(config).model_copy(update={"journal": pg_url}))

    res = run_cli("audit", "verify", "--home", str(home))
    assert res.returncode == 0, res.stdout  # the database named is intact
    out = " ".join(res.stdout.split())
    assert "intact" in out
    assert "postgresql://" in out, out
    assert "config.json" in out, out
    assert "journal.sqlite" in out, out  # the file beside it was not read: said so

    res = run_cli("audit", "verify", "--home", str(home), "--format", "json")
    assert json.loads(res.stdout)["journal"].startswith("postgresql://")

    # what the README tells an auditor: the environment names the file itself
    spelled = f"{home}/./journal.sqlite"
    res = run_cli("audit", "verify", "--home", str(home), env={JOURNAL_URL_ENV: spelled})
    assert res.returncode == 1, res.stdout
    assert res.stdout.startswith("BROKEN")
    assert "journal:" not in res.stdout


def test_the_homes_own_file_is_named_in_json_only(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = handed_home(tmp_path_factory, "t295-own")
    res = run_cli("audit", "verify", "--home", str(home))
    assert res.returncode == 0
    assert res.stdout.startswith("intact: ")
    assert len(res.stdout.strip().splitlines()) == 1
    res = run_cli("audit", "verify", "--home", str(home), "--format", "json")
    assert json.loads(res.stdout)["journal"] == str(home / "journal.sqlite")
