"""``cradle-kg worker`` reads its proposals line by line, capped and strict, whatever comes.

Finding: the worker read stdin with ``for line in sys.stdin`` — Python's text reader, a
whole line at a time, decoded by the locale's codec — and only then handed the line to
the strict loader (which refuses a line past ``max_bytes``, 1 MiB). Each line is an
agent's proposal, so whoever feeds the queue wrote it. Measured before the fix: a 64 MiB
line took the worker's peak RSS from 73 to 230 MB (the bytes and the decoded text, each
whole), and a line that never ends grew it for as long as it was sent — the cap of
``mcp serve``'s stdin (``test_31``, ``test_45``) was not there. Under an ordinary locale
(``en_US.UTF-8``, or ``PYTHONIOENCODING=utf-8``: strict decoding) a byte that is not UTF-8
ended the worker with ``error: unexpected UnicodeDecodeError``, exit 2 — the proposals
that shared its 8 KiB read buffer before it (already sent, well formed) were never
answered, and none after it was read.

Now the worker reads stdin's bytes through a capped line reader (``cli.storage.
capped_stdin_lines``, the synchronous twin of ``mcp_server.capped_lines``): a line past
``max_bytes`` is dropped as it arrives and answered ``{"line": N, "error": "… more than
the limit …"}``, ended or not; every line is decoded by the strict loader (bytes not UTF-8
are that line's error); nothing is journaled for a refused line, and the next line is
read as before.

Real ``cradle-kg worker`` subprocesses on the home's SQLite journal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, ledger_for

from .homes import without_journal_url
from .jsonl_process import ROOT
from .test_45_mcp_stdin_file import _PEAK  # the CLI writing its own peak RSS

pytestmark = pytest.mark.sqlite_only("counts the events of the home's own journal")

#: the line past max_bytes (1 MiB)
LONG = 64 << 20



def _credit(pid: str, amount: int, *, extra: bytes = b"") -> bytes:
    return (b'{"id":"%s","task_id":"t-%s","agent_id":"%s","action":{"action_type":'
            b'"demo.ledger.credit","target":"ledger:acct-1","arguments":{"account":'
            b'"acct-1","amount":%d%s}}}' % (pid.encode(), pid.encode(), AGENT.encode(),
                                            amount, extra))


def _worker(home: Path, data: bytes, tmp: Path, *, env: dict[str, str] | None = None
            ) -> tuple[list[dict[str, Any]], int, int, str]:
    """``cradle-kg worker < data``: its answers, exit code, peak RSS (MB) and stderr."""
    feed, log, peak = tmp / "feed.jsonl", tmp / "worker.log", tmp / "peak"
    feed.write_bytes(data)
    run_env = {**without_journal_url(), **(env or {}), "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    with feed.open("rb") as stdin, log.open("wb") as stderr:
        done = subprocess.run([sys.executable, "-c", _PEAK, str(peak), "worker", "--home",
                               str(home), "--recover-every", "0"], stdin=stdin,
                              stdout=subprocess.PIPE, stderr=stderr, env=run_env, cwd=ROOT,
                              timeout=300, check=False)
    feed.unlink()
    return ([json.loads(line) for line in done.stdout.splitlines()], done.returncode,
            int(peak.read_text()) // 1024, log.read_text(errors="replace"))


def _received(home: Path) -> list[str]:
    with Runtime(home) as rt:
        return [e.payload["proposal"]["id"]
                for e in rt.journal.events_of_kind("proposal.received")]


def _balance(home: Path) -> Any:
    with Runtime(home) as rt:
        return ledger_for(rt).balance("acct-1")


def _lines(*lines: bytes, end: bytes = b"\n") -> bytes:
    return b"\n".join(lines) + end


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "utf-8"}, {}],
                         ids=["strict-locale", "default"])
def test_bytes_not_utf8_are_that_lines_error(home: Path, tmp_path: Path,
                                             env: dict[str, str]) -> None:
    data = _lines(_credit("p1", 1), _credit("p\xff2", 2).replace(b"\xc3\xbf", b"\xff"),
                  b"\xfe\xff not even json", _credit("p4", 4))
    answers, code, _, log = _worker(home, data, tmp_path, env=env)
    assert "unexpected" not in log and "Traceback" not in log, log
    assert code == 1, log  # some line was not executed
    assert [a.get("line") for a in answers] == [None, 2, 3, None], answers
    assert answers[0]["status"] == "executed" and answers[3]["status"] == "executed"
    assert "UTF-8" in answers[1]["error"] and "UTF-8" in answers[2]["error"], answers
    assert _received(home) == ["p1", "p4"]
    assert _balance(home) == 5


def test_a_line_past_the_limit_is_dropped_as_it_arrives(home: Path, tmp_path: Path) -> None:
    long_line = _credit("p2", 2, extra=b',"memo":"' + b"x" * LONG + b'"')
    _, _, baseline, _ = _worker(home, _lines(_credit("p0", 1)), tmp_path)
    answers, code, peak, log = _worker(
        home, _lines(_credit("p1", 1), long_line, _credit("p3", 3)), tmp_path)
    assert "unexpected" not in log and "Traceback" not in log, log
    assert peak - baseline < 32, f"a {LONG >> 20} MiB line took the peak from " \
                                 f"{baseline} to {peak} MB"
    assert code == 1
    assert answers[1] == {"line": 2, "error": answers[1]["error"]}
    assert "more than the limit of 1048576 bytes" in answers[1]["error"]
    assert answers[0]["status"] == answers[2]["status"] == "executed", answers
    assert _received(home) == ["p0", "p1", "p3"]


@pytest.mark.parametrize("tail", [b"", b"\x00" * 1024])
def test_a_line_that_never_ends_is_refused_at_the_end(home: Path, tmp_path: Path,
                                                      tail: bytes) -> None:
    endless = b'{"id":"p2","memo":"' + b"y" * (4 << 20) + tail  # no newline, ever
    answers, code, _, log = _worker(home, _lines(_credit("p1", 1), end=b"\n") + endless,
                                       tmp_path)
    assert "unexpected" not in log and "Traceback" not in log, log
    assert code == 1
    assert [a.get("line") for a in answers] == [None, 2], answers
    assert "more than the limit" in answers[1]["error"]
    assert _received(home) == ["p1"]


def test_nul_and_small_lines_are_refused_one_by_one(home: Path, tmp_path: Path) -> None:
    refused: Sequence[bytes] = (b'{"id":"p\x002"}', b"[" * 100_000 + b"]" * 100_000,
                                b'{"id":"a","id":"b"}', b"\x00")
    answers, code, _, log = _worker(home, _lines(*refused, _credit("p9", 9)), tmp_path)
    assert "unexpected" not in log and "Traceback" not in log, log
    assert code == 1
    assert [a.get("line") for a in answers] == [1, 2, 3, 4, None], answers
    assert answers[4]["status"] == "executed"
    assert _received(home) == ["p9"]
