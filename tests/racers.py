"""Processes raced against one journal: started together, one answer each, never left behind.

Racers are fresh processes, as ``spawn`` makes them, but forked from a fork server: one
clean Python process per test process that imported the test modules' common imports once
(``spawn`` paid the interpreter, pytest and cradle-kg's imports in each racer, ~0.4-0.5 s
of CPU). A fork server is no fork of the test process: no thread, connection or state of
the test's is in a racer. What ``spawn`` hands a racer from the parent at its start — the
environment (the journal backend is an environment variable) and the working folder —
:func:`racer` hands it too.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Protocol, TextIO

#: what the fork server imports before it forks a racer: what every racing module imports
#: (a racer imports its own module on top, as it unpickles its target)
_PRELOAD = ["tests.conftest"]
#: the environment before any test changed it (this module is imported at collection)
_FIRST_ENV = dict(os.environ)


def racing_context() -> BaseContext:
    """The context racers and what they share (barriers, queues) are made in.

    The fork server is one per test process, and not only the racers': cradle-kg's query
    server forks its workers from it too. So it is started (if this process has none yet)
    with the environment the tests started with, not with the one of the test that
    happens to start it (a journal backend of its own, a crash point); each racer gets
    its test's from :func:`racer`. The preload takes effect if the server is started here
    (cradle-kg's server preloads its own modules: racers then import more)."""
    from multiprocessing import forkserver

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(_PRELOAD)
    now = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(_FIRST_ENV)
        forkserver.ensure_running()
    finally:
        os.environ.clear()
        os.environ.update(now)
    return ctx


def racer(ctx: BaseContext, target: Callable[..., Any], *args: Any) -> BaseProcess:
    """A racer process running ``target(*args)`` with this process's environment and
    working folder of now (the fork server's are those of when it started)."""
    return ctx.Process(target=_as_spawned, args=(dict(os.environ), os.getcwd(), target, args))


def _as_spawned(environ: dict[str, str], cwd: str, target: Callable[..., Any],
                args: tuple[Any, ...]) -> None:
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(cwd)
    # the one module that reads the environment when imported: as a fresh import would
    from cradle_kg import crashpoints

    point, _, at_pass = environ.get("CRADLE_CRASH_AT", "").partition(":")
    crashpoints.arm(point, at_pass=int(at_pass or 1))
    target(*args)


class _Answers(Protocol):
    def get(self, block: bool = ..., timeout: float | None = ...) -> Any: ...


def race(procs: Sequence[BaseProcess], answers: _Answers, *,
         meanwhile: Callable[[], None] | None = None, timeout: float = 300) -> list[Any]:
    """Start ``procs``, run ``meanwhile`` (the parent's part of the race, if any), then take
    one answer per process from ``answers``; every process is joined, and killed if it
    hangs, whatever happens. Asserts they all exited cleanly."""
    for proc in procs:
        proc.start()
    try:
        if meanwhile is not None:
            meanwhile()
        got = [answers.get(timeout=timeout) for _ in procs]
    finally:
        for proc in procs:
            proc.join(60)
            if proc.exitcode is None:
                proc.kill()
    assert all(proc.exitcode == 0 for proc in procs), [proc.exitcode for proc in procs]
    return got


#: what ``python -m cradle_kg`` runs, for :class:`ForkedPython` (``sys.argv[0]`` becomes
#: the module's file, as ``-m`` makes it)
CLI = "import runpy\nrunpy.run_module('cradle_kg', run_name='__main__', alter_sys=True)\n"


class ForkedPython:
    """A ``python -c CODE ARGV`` forked from the fork server (see the module), with what a
    test uses of a ``subprocess.Popen``: ``pid`` (a real process: ``SIGSTOP``, ``SIGKILL``
    reach it), ``poll()``, ``kill()``, ``returncode`` and ``communicate(timeout)``; what it
    prints goes to files, read once it has ended. ``stdin``: the bytes it reads (else
    ``/dev/null``); ``preexec``: a module-level function run in it before the code (a
    resource limit), as ``subprocess``'s ``preexec_fn``; ``stream``: its stdout is a pipe
    (a FIFO) the test reads as it runs, ``self.stdout``, as ``stdout=subprocess.PIPE``."""

    def __init__(self, code: str, argv: Sequence[str], *, env: Mapping[str, str],
                 cwd: str | Path, stdin: bytes | None = None,
                 preexec: Callable[[], None] | None = None, stream: bool = False) -> None:
        self.args = ["-c", code, *argv]
        self._tmp = tempfile.TemporaryDirectory()
        self._out, self._err = Path(self._tmp.name) / "stdout", Path(self._tmp.name) / "stderr"
        if stream:
            os.mkfifo(self._out, 0o600)
        given = None
        if stdin is not None:
            given = Path(self._tmp.name) / "stdin"
            given.write_bytes(stdin)
        self._proc = racing_context().Process(target=_run_code, args=(
            dict(env), str(cwd), code, list(argv), str(self._out), str(self._err),
            None if given is None else str(given), preexec))
        self._proc.start()
        assert self._proc.pid is not None
        self.pid: int = self._proc.pid
        # the child opens the FIFO for writing first thing: this open waits for it
        self.stdout: TextIO | None = (self._out.open(encoding="utf-8", errors="replace")
                                      if stream else None)
        self._answer: tuple[str, str] | None = None

    @property
    def returncode(self) -> int | None:
        return self._proc.exitcode

    def poll(self) -> int | None:
        return self._proc.exitcode

    def kill(self) -> None:
        self._proc.kill()

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Wait for its end (``TimeoutExpired`` after ``timeout``); its stdout and stderr."""
        if self._answer is not None:  # asked again: what the first call read
            return self._answer
        self._proc.join(timeout)
        if self._proc.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        if self.stdout is not None:  # the rest of the pipe: the writer is gone, so EOF
            out = self.stdout.read()
            self.stdout.close()
            err = self._err.read_text(encoding="utf-8", errors="replace")
        else:
            out, err = (p.read_text(encoding="utf-8", errors="replace") if p.exists() else ""
                        for p in (self._out, self._err))
        self._tmp.cleanup()
        self._answer = (out, err)
        return out, err


def run_python(code: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | Path,
               timeout: float, stdin: bytes | None = None,
               preexec: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    """What ``subprocess.run([python, "-c", code, *argv], env=env, cwd=cwd,
    capture_output=True, text=True)`` answers, from a :class:`ForkedPython`: its own
    process, which can die of a real SIGKILL (returncode -9), with ``env`` as its whole
    environment, ``cwd`` its folder, ``sys.argv`` as ``-c`` gives it; one still running
    after ``timeout`` seconds is killed and raises ``TimeoutExpired``. ``code`` may be
    :data:`CLI`: ``python -m cradle_kg ARGV``."""
    proc = ForkedPython(code, argv, env=env, cwd=cwd, stdin=stdin, preexec=preexec)
    try:
        out, err = proc.communicate(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    assert proc.returncode is not None
    return subprocess.CompletedProcess(["-c", code, *argv], proc.returncode, out, err)


def _run_code(environ: dict[str, str], cwd: str, code: str, argv: list[str], out: str,
              err: str, stdin: str | None = None,
              preexec: Callable[[], None] | None = None) -> None:
    for fd, path in ((1, out), (2, err)):
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    if stdin is not None:  # multiprocessing gave it /dev/null: the given bytes instead
        opened = os.open(stdin, os.O_RDONLY)
        os.dup2(opened, 0)
        os.close(opened)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (the process's own stdin)
    if preexec is not None:
        preexec()
    sys.argv = ["-c", *argv]
    # an uncaught exception: its traceback on stderr and exit code 1, as python -c does
    # (multiprocessing's bootstrap prints it and flushes both streams)
    _as_spawned(environ, cwd, exec, (compile(code, "<string>", "exec"), {"__name__": "__main__"}))


def at_once(*calls: Callable[[], Any], timeout: float = 120) -> list[Any]:
    """Each of ``calls`` in a thread of this process, released together by a barrier: what
    each returned, or the exception it raised (in-process races of one runtime's callers,
    as the JSON API's threads are; the journal's guards decide them)."""
    import threading

    gate = threading.Barrier(len(calls))
    got: list[Any] = [None] * len(calls)

    def run(i: int, call: Callable[[], Any]) -> None:
        gate.wait(timeout)
        try:
            got[i] = call()
        except Exception as exc:  # the race's answer: returned to the test, which checks it
            got[i] = exc

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a racing call hung"
    return got
