"""The storage commands through the CLI, on a real PostgreSQL: ``db status|migrate``,
``journal copy --to``, ``audit verify`` and ``runs list`` on the copy (run in this process:
the journal is the point, not an interpreter start), and two ``cradle-kg worker``
processes sharing one journal (real processes: two writers are the point)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cradle_kg.demo.scenario import prepare_home, run_demo
from cradle_kg.storage import JOURNAL_URL_ENV, SqliteJournal, open_journal
from cradle_kg.storage.pg_scratch import ScratchPostgres
from tests.conftest import proposal
from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    """``cradle-kg ARGS`` in this process, the journal URL variable set to ``url`` (unset
    when ``None``)."""
    return run_cli(*args, env={JOURNAL_URL_ENV: url})


def test_db_migrate_then_copy_then_verify(tmp_path: Path, postgres: ScratchPostgres) -> None:
    url = postgres.create_schema()
    home = tmp_path / "home"
    status = cli("db", "status", "--home", str(home), "--format", "json", url=url)
    assert status.returncode == 1, status.stderr  # pending
    assert json.loads(status.stdout)["pending"] and json.loads(status.stdout)["applied"] == []
    done = cli("db", "migrate", "--home", str(home), url=url)
    assert done.returncode == 0 and "applied 1:" in done.stdout, done.stderr
    again = cli("db", "migrate", "--home", str(home), "--format", "json", url=url)
    assert json.loads(again.stdout)["applied"] == []  # each migration once
    assert cli("db", "status", "--home", str(home), url=url).returncode == 0
    # a SQLite home (the demo), copied into the PostgreSQL journal
    run_demo(home)
    with SqliteJournal(home / "journal.sqlite") as j:
        head = j.head()
    copied = cli("journal", "copy", "--to", url, "--home", str(home), "--format", "json")
    assert copied.returncode == 0, copied.stderr
    assert (json.loads(copied.stdout)["events"], json.loads(copied.stdout)["head_hash"]) == head
    verified = cli("audit", "verify", "--home", str(home), "--format", "json", url=url)
    assert verified.returncode == 0, verified.stdout
    assert json.loads(verified.stdout)["head_hash"] == head[1]
    runs = cli("runs", "list", "--home", str(home), "--format", "json", url=url)
    assert runs.returncode == 0 and runs.stdout.strip(), runs.stderr
    twice = cli("journal", "copy", "--to", url, "--home", str(home))
    assert twice.returncode == 2 and "already holds events" in twice.stdout + twice.stderr


def test_audit_verify_on_postgres_names_a_tampered_event(tmp_path: Path, pg_url: str) -> None:
    import psycopg

    home = tmp_path / "home"
    with open_journal(pg_url) as j:
        from tests.storage.test_journal_contract import SCRIPT

        j.append(SCRIPT)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE events SET actor = 'agent:mallory' WHERE seq = 3")
    broken = cli("audit", "verify", "--home", str(home), url=pg_url)
    assert broken.returncode == 1 and "BROKEN at seq 3" in broken.stdout, broken.stdout


def test_two_workers_share_one_postgres_journal(tmp_path: Path, pg_url: str) -> None:
    home = tmp_path / "home"
    prepare_home(home)
    env = {**{k: v for k, v in os.environ.items() if k != JOURNAL_URL_ENV},
           JOURNAL_URL_ENV: pg_url}
    workers = []
    for w in range(2):
        lines = "".join(json.dumps(proposal(f"p-{w}-{i}", "demo.ledger.credit",
                                            {"account": f"acct-{w}", "amount": 1})) + "\n"
                        for i in range(3))
        proc = subprocess.Popen([sys.executable, "-m", "cradle_kg", "worker", "--home",
                                 str(home), "--recover-every", "0"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=ROOT)
        workers.append((proc, lines))
    outs = [proc.communicate(lines, timeout=180) for proc, lines in workers]
    for (proc, _), (out, err) in zip(workers, outs, strict=True):
        assert proc.returncode == 0, err
        assert [json.loads(x)["status"] for x in out.splitlines()] == ["executed"] * 3
        assert " on postgresql://" in err  # it says which journal it works on
    with open_journal(pg_url) as j:
        assert j.verify().intact
        assert len(j.events_of_kind("action.intent")) == 6
        workers_seen = {e.payload["worker"] for e in j.events_of_kind("action.intent")}
        assert len(workers_seen) == 2 and not any(j.worker_alive(w) for w in workers_seen)
    assert not (home / "journal.sqlite").exists()  # nothing went to the embedded default
