"""``mcp serve`` reads stdin with the strict loader whatever stdin is: a file, a terminal.

Finding: ``test_31`` put the strict loader and the line cap in front of ``mcp serve``'s
stdin — but only when stdin was a pipe or a socket. A regular file (``cradle-kg mcp serve
--agent … < requests.jsonl``) or a terminal fell back to the SDK's own reader, and
``test_31``'s findings came back: ``"amount": 1, "amount": 50`` credited 50, a byte that
is not UTF-8 became U+FFFD and the call ran on text nobody sent, and a line was read
whole before anything looked at it. Measured before the fix: on a terminal the first call
credited 50; a 64 MiB line in the file took the server's peak RSS from 98 to 413 MB (a
256 MiB one to 1376 MB, in 49 s — and the two calls before it both ran); after, 98 MB.
stdin of every kind is now read by one reader (``mcp_server._StdinLines`` over
``capped_lines``): a pipe or a socket on the event loop, anything else by plain reads in
a worker thread; a refused line is answered with a JSON-RPC error and journals nothing.

Real ``cradle-kg mcp serve`` subprocesses: stdin a regular file (and a terminal, a pty),
raw JSON-RPC lines.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, ledger_for

from .jsonl_process import ROOT

INIT = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "attacker", "version": "1"}}}).encode(),
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}']
#: a key given twice (the SDK read the last: 50), and a byte that is not UTF-8
TWICE = b'{"account":"acct-1","amount":1,"amount":50}'
NOT_UTF8 = b'{"account":"acct-\xff1","amount":5}'
#: the line past max_bytes (1 MiB): a call the SDK would have run
LONG = 64 << 20


def _call(rid: int, arguments: bytes) -> bytes:
    return (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":'
            b'"demo.ledger.credit","arguments":' % rid) + arguments + b"}}"


def _argv(home: Path) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return [sys.executable, "-m", "cradle_kg", "mcp", "serve", "--home", str(home),
            "--agent", AGENT], env


#: ``python -m cradle_kg …`` that writes its own peak RSS (``VmHWM``: this process's
#: since its exec — a child's ``ru_maxrss`` starts at its parent's, pytest's) at its exit
_PEAK = ("import atexit, runpy, sys\n"
         "out = sys.argv.pop(1)\n"
         "def peak():\n"
         "    with open('/proc/self/status') as fh, open(out, 'w') as o:\n"
         "        o.write(next(x for x in fh if x.startswith('VmHWM')).split()[1])\n"
         "atexit.register(peak)\n"
         "sys.argv[0] = 'cradle-kg'\n"
         "runpy.run_module('cradle_kg', run_name='__main__')\n")


def _serve_file(home: Path, lines: Sequence[bytes], tmp: Path
                ) -> tuple[list[dict[str, Any]], int, str]:
    """``mcp serve < requests.jsonl`` until the file's end: its answers, its peak RSS (MB)
    and its stderr."""
    requests, log, peak = tmp / "requests.jsonl", tmp / "serve.log", tmp / "peak"
    with requests.open("wb") as out:
        for line in lines:
            out.write(line + b"\n")
    argv, env = _argv(home)
    with requests.open("rb") as stdin, log.open("wb") as stderr:
        done = subprocess.run([argv[0], "-c", _PEAK, str(peak), *argv[3:]], stdin=stdin,
                              stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=ROOT,
                              timeout=300, check=False)
    requests.unlink()
    assert done.returncode == 0, log.read_text(errors="replace")
    return ([json.loads(line) for line in done.stdout.splitlines()],
            int(peak.read_text()) // 1024, log.read_text(errors="replace"))


def _refused(answers: list[dict[str, Any]], rid: int | None) -> dict[str, Any]:
    """The strict loader's refusal under ``rid`` (none when the line was too long to be
    read at all)."""
    found = [m for m in answers if m.get("id") == rid]
    assert len(found) == 1, answers
    assert found[0].get("error", {}).get("code") in (-32700, -32600), found
    return dict(found[0]["error"])


def _nothing_ran(home: Path) -> None:
    with Runtime(home) as rt:
        assert not rt.journal.events_of_kind("proposal.received")
        assert ledger_for(rt).balance("acct-1") == 0


def test_a_key_given_twice_or_bytes_not_utf8_in_a_file_are_refused(
        home: Path, tmp_path: Path) -> None:
    answers, _, log = _serve_file(home, [*INIT, _call(2, TWICE), _call(3, NOT_UTF8)],
                                  tmp_path)
    assert "duplicate key" in _refused(answers, 2)["message"]
    assert "UTF-8" in _refused(answers, 3)["message"]
    assert "Traceback" not in log, log
    _nothing_ran(home)


@pytest.mark.slow
def test_a_line_past_the_limit_in_a_file_is_refused_not_buffered(
        home: Path, tmp_path: Path) -> None:
    long_call = _call(4, b'{"account":"acct-1","amount":3,"reason":"'
                      + b"x" * LONG + b'"}')
    _, baseline, _ = _serve_file(home, INIT, tmp_path)
    answers, peak, log = _serve_file(home, [*INIT, long_call], tmp_path)
    assert peak - baseline < 32, f"a {LONG >> 20} MiB line took the peak from " \
                                 f"{baseline} to {peak} MB"
    assert "limit" in _refused(answers, None)["message"]
    assert not [m for m in answers if m.get("id") == 4], answers
    assert "Traceback" not in log, log
    _nothing_ran(home)


def test_a_key_given_twice_on_a_terminal_is_refused(home: Path, tmp_path: Path) -> None:
    """stdin a terminal (a pty in canonical mode: a read is a line, ^D ends the input);
    each call is answered before the input ends (before the fix: both ran)."""
    master, terminal = pty.openpty()
    argv, env = _argv(home)
    with (tmp_path / "serve.log").open("wb") as stderr:
        proc = subprocess.Popen(argv, stdin=terminal, stdout=subprocess.PIPE,
                                stderr=stderr, env=env, cwd=ROOT)
    os.close(terminal)
    answers: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        answers.extend(json.loads(line) for line in proc.stdout)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        for line in [*INIT, _call(2, TWICE), _call(3, NOT_UTF8)]:
            os.write(master, line + b"\n")
        deadline = time.monotonic() + 60
        while not {2, 3} <= {m.get("id") for m in list(answers)} \
                and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        os.write(master, b"\x04")  # ^D at the start of a line: the end of the input
        assert proc.wait(60) == 0
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert "duplicate key" in _refused(answers, 2)["message"]
    assert "UTF-8" in _refused(answers, 3)["message"]
    _nothing_ran(home)
