"""``journal copy`` and ``audit verify`` on PostgreSQL hold a bounded page of events, not
as many rows as a batch counts, whatever the rows weigh.

Finding: an agent's proposal is journaled as it came, denied or not, up to the home's
``max_bytes`` (1 MiB): an over-budget proposal of ~960 KB of arguments wrote two ~960 KB
events (``proposal.received``, ``decision.made``); a tool's output is kept up to
``max_output_bytes`` (16 MiB). ``journal copy`` sent the source's rows to PostgreSQL in
batches of 50,000 *rows*, each batch a list in memory, and verified the copy — as ``audit
verify`` verifies a PostgreSQL journal — through a server-side cursor fetching 2,000
*rows* at a time: memory grew with the journal itself, up to those counts. Measured
before the fix (this test, 16 then 160 events of ~1 MB): ``journal copy``'s peak RSS went
from 100 to 512 MB, ``audit verify``'s from 81 to 357 MB — linear in what the agents
wrote; at 2,000 events of 16 MiB outputs one fetch of the verifier would be ~32 GB. An
agent filling the journal made the operator's integrity check, and the move to
PostgreSQL, run out of memory.

Now a copy batch ends at 32 MiB of text (``pg_copy.BATCH_BYTES``; one row more at most)
and the verifier walks the events a page at a time — the next 2,000 rows by seq, kept
while the text before each is under 32 MiB (``pg_verify.PAGE_BYTES``; their lengths read
by the server, not their values): the same 16 and 160 events peak at 99 and 173 MB
(copy), 80 and 147 MB (verify), flat past a page; the chain walked is the same, every row
in seq order (a page's first row always, the next page after the last seq seen).
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cradle_kg.storage import NewEvent, SqliteJournal
from cradle_kg.storage.pg_scratch import ScratchPostgres
from cradle_kg.storage.pg_verify import verify_postgres

from .homes import without_journal_url
from .jsonl_process import ROOT
from .test_45_mcp_stdin_file import _PEAK  # the CLI writing its own peak RSS

#: one event's payload: about what an over-budget 1 MiB proposal journals
EVENT = 1_000_000
SMALL, LARGE = 16, 160



@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Homes whose SQLite journal holds SMALL and LARGE events of ~1 MB each."""
    found = {}
    for n in (SMALL, LARGE):
        root = tmp_path_factory.mktemp(f"copy{n}")
        with SqliteJournal(root / "journal.sqlite") as journal:
            for i in range(n):
                journal.append([NewEvent(
                    run_id=f"run:{i % 4}", kind="proposal.received", subject=f"proposal:p{i}",
                    actor="agent:a", at=datetime(2026, 1, 1, tzinfo=UTC),
                    payload={"proposal": {"id": f"p{i}", "memo": "m" * EVENT}})])
        found[n] = root
    return found


def _peak(args: list[str], env: dict[str, str], tmp: Path) -> tuple[int, str]:
    """The command's peak RSS (MB) and its stderr; it must succeed."""
    peak = tmp / "peak"
    run_env = {**without_journal_url(), **env, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run([sys.executable, "-c", _PEAK, str(peak), *args],
                          capture_output=True, text=True, env=run_env, cwd=ROOT,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return int(peak.read_text()) // 1024, done.stdout + done.stderr


@pytest.mark.slow
def test_copy_and_verify_memory_stays_bounded(homes: dict[int, Path],
                                              postgres: ScratchPostgres,
                                              tmp_path: Path) -> None:
    copied, verified = {}, {}
    for n, home in homes.items():
        url = postgres.create_schema()
        copied[n], out = _peak(["journal", "copy", "--home", str(home), "--to", url], {},
                               tmp_path)
        assert f"copied {n} events" in out, out
        verified[n], out = _peak(["audit", "verify", "--home", str(home)],
                                 {"CRADLE_JOURNAL_URL": url}, tmp_path)
        assert f"intact: {n} events" in out, out
        assert verify_postgres(url).events == n
    grown = LARGE * EVENT >> 20
    problems = [f"{what} {grown} MB more of events took the peak from {peak[SMALL]} to "
                f"{peak[LARGE]} MB" for what, peak in (("copying", copied),
                                                      ("verifying", verified))
                if peak[LARGE] - peak[SMALL] >= 128]
    assert not problems, problems
