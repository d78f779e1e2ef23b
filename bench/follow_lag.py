"""The projector's lag under the workers' load, for ``bench_workers.py --follow``.

One ``cradle-kg graph follow`` subprocess per round (``python -m cradle_kg graph follow
--format json``, as production runs it) keeps the home's graph store in step with the
journal while the workers submit. From the bench process a sampler thread reads, every
~50 ms, the journal's head and the store's projected watermark, and for each sample takes
the lag in seconds = the sample's wall time - the append time (``at``) of the oldest event
not yet projected (0 when the store is at the head).

Where the watermark comes from: a remote store (``oxigraph serve``) is asked through the
GraphStore protocol (``projected_seq``); the embedded on-disk store admits no live second
reader (pyoxigraph's read-only store is a snapshot taken when it is opened, and reopening
it costs ~50 ms and is undefined while another process writes), so there the watermark is
the follower's own JSON-lines progress (each line says ``projected``), read as it arrives.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cradle_kg.storage import open_journal
from cradle_kg.storage.graph_config import GRAPH_URL_ENV

SAMPLE_EVERY = 0.05


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


@dataclass
class Follower:
    """One ``graph follow`` process and what it has said so far."""

    home: Path
    interval: float
    batch: int
    remote_url: str | None  # a remote store's base URL, or None for the embedded one
    server_pid: int | None = None  # the remote store's process (its CPU is counted)
    projected: int = 0  # the latest watermark the follower reported (embedded store)
    lines: int = 0
    added: int = 0  # events projected, over its reports
    busy: float = 0.0  # seconds its rounds took (their ``seconds``)
    rounds: int = 0
    biggest: int = 0  # the most events one round projected
    #: the nice of the follower's session (its autogroup: the CPU share the session gets
    #: against the others'), as a deployment would give its projector a CPU weight; None
    #: leaves it alone (0, every session's)
    nice: int | None = None
    cpu: float = 0.0  # its CPU seconds (user + system), read before it is stopped
    sched: tuple[float, float] = (0.0, 0.0)  # its threads' seconds on a CPU, and waiting for one
    server_cpu: float = 0.0
    _round: tuple[int, int, float] = (-1, 0, 0.0)  # the latest round: start, added, seconds
    _mark: tuple[int, float, int, float, float] = (0, 0.0, 0, 0.0, 0.0)  # the load's start
    _sched_mark: tuple[float, float] = (0.0, 0.0)
    errors: list[str] = field(default_factory=list)
    proc: subprocess.Popen[str] | None = None
    _reader: threading.Thread | None = None

    def start(self, projected: int) -> None:
        self.projected = projected
        env = dict(os.environ)
        if self.remote_url is not None:
            env[GRAPH_URL_ENV] = self.remote_url
        else:
            env.pop(GRAPH_URL_ENV, None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cradle_kg", "graph", "follow", "--home", str(self.home),
             "--format", "json", "--interval", str(self.interval), "--batch",
             str(self.batch)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL,
            # a service of its own, as production runs it (and as the bench runs each
            # worker): with the kernel's autogroup scheduling a session is one CPU share,
            # which it would otherwise split with this bench process
            start_new_session=True)
        if self.nice is not None:
            _set_autogroup_nice(self.proc.pid, self.nice)
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,),
                                        daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            try:
                status = json.loads(line)
            except ValueError:
                continue
            self.lines += 1
            if status.get("error"):
                self.errors.append(str(status["error"]))
            else:
                self.projected = max(self.projected, int(status["projected"]))
                # a long round reports once per batch, cumulatively (its start stays
                # ``projected - added``): each round is counted once, at its latest report
                added, seconds = int(status["added"]), float(status["seconds"])
                start = int(status["projected"]) - added
                if start == self._round[0]:
                    self.added -= self._round[1]
                    self.busy -= self._round[2]
                else:
                    self.rounds += 1
                self._round = (start, added, seconds)
                self.added += added
                self.busy += seconds
                self.biggest = max(self.biggest, added)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.cpu = _cpu_seconds(self.proc.pid)
            self.sched = _sched_seconds(self.proc.pid)
            self.server_cpu = _cpu_seconds(self.server_pid) if self.server_pid else 0.0
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._reader is not None:
            self._reader.join(10)
        stderr = self.proc.stderr.read() if self.proc.stderr is not None else ""
        if self.proc.returncode != 0:
            raise RuntimeError(f"`graph follow` exited {self.proc.returncode}: "
                               f"{stderr[-800:]}")


    def mark(self) -> None:
        """The load starts: count from here (its start-up and the warm-up left out)."""
        assert self.proc is not None
        self.biggest = 0
        self._mark = (self.added, self.busy, self.rounds, _cpu_seconds(self.proc.pid),
                      _cpu_seconds(self.server_pid) if self.server_pid else 0.0)
        self._sched_mark = _sched_seconds(self.proc.pid)

    def figures(self) -> dict[str, float]:
        """What the follower did from :meth:`mark` to its stop: events, rounds, the time
        its rounds took and its CPU, per event."""
        added, busy = self.added - self._mark[0], self.busy - self._mark[1]
        cpu, server = self.cpu - self._mark[3], self.server_cpu - self._mark[4]
        return {"follower_events": added, "follower_rounds": self.rounds - self._mark[2],
                "follower_biggest_round": self.biggest,
                "follower_ms_per_event": round(1000 * busy / added, 2) if added else 0.0,
                "follower_cpu_ms_per_event": round(1000 * cpu / added, 2) if added else 0.0,
                # how long its threads waited for a CPU while runnable (the scheduler's
                # run-queue time, /proc/PID/task/*/schedstat), per event: a follower that
                # waits longer than it runs is starved of CPU, not slow
                "follower_wait_ms_per_event": round(
                    1000 * (self.sched[1] - self._sched_mark[1]) / added, 2) if added else 0.0,
                # the remote store's own CPU per event projected (-1: the embedded store)
                "follower_server_cpu_ms_per_event": -1.0 if self.server_pid is None else
                round(1000 * server / added, 2) if added else 0.0}


def _sched_seconds(pid: int) -> tuple[float, float]:
    """Seconds the process's threads have run on a CPU, and waited runnable for one."""
    ran = waited = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                fields = (task / "schedstat").read_text().split()
            except OSError:
                continue  # a thread that ended meanwhile
            ran, waited = ran + int(fields[0]), waited + int(fields[1])
    except OSError:
        pass
    return ran / 1e9, waited / 1e9


def _set_autogroup_nice(pid: int, nice: int) -> None:
    """Give the session of ``pid`` (a session leader) the autogroup nice ``nice``: below 0
    needs CAP_SYS_NICE (root)."""
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))
    except OSError as exc:
        raise RuntimeError(f"cannot set the follower's autogroup nice to {nice}: {exc} "
                           "(below 0 needs root; is autogroup scheduling on?)") from None


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Sampler:
    """Samples (time, head, projected, lag seconds) every ~50 ms in a thread of its own
    (started after the workers are forked: a forked worker inherits no thread, no
    connection)."""

    def __init__(self, journal_url: str, follower: Follower, store: Any) -> None:
        self.journal_url, self.follower, self.store = journal_url, follower, store
        self.samples: list[tuple[float, int, int, float]] = []  # perf_counter, head, proj, lag
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._at: dict[int, float] = {}  # seq -> append time (epoch seconds)
        self.failure: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        if self.failure is not None:
            raise RuntimeError(f"the lag sampler failed: {self.failure!r}")

    def latest(self) -> tuple[float, int, int, float] | None:
        return self.samples[-1] if self.samples else None

    def _projected(self) -> int:
        if self.store is not None:  # a remote store: through the GraphStore protocol
            return int(self.store.projected_seq())
        return self.follower.projected

    def _run(self) -> None:
        try:
            with open_journal(self.journal_url) as journal:
                while not self._stop.is_set():
                    self._sample(journal)
                    self._stop.wait(SAMPLE_EVERY)
        except BaseException as exc:  # reported by stop()
            self.failure = exc

    def _sample(self, journal: Any) -> None:
        projected = self._projected()  # first: a watermark never ahead of the head read
        head = journal.head()[0]
        now_wall, now = time.time(), time.perf_counter()
        lag = 0.0
        if projected < head:
            oldest = projected + 1
            if oldest not in self._at:
                for event in journal.events(since_seq=projected, batch=1):
                    self._at[event.seq] = event.at.timestamp()
                    break
            lag = max(0.0, now_wall - self._at.get(oldest, now_wall))
        self.samples.append((now, head, projected, lag))


def lag_figures(sampler: Sampler, start: float, end: float,
                caught_up_at: float | None) -> dict[str, float]:
    """p50 / p99 / max lag over the samples taken while the workers ran (``start`` to
    ``end``, perf_counter), and the seconds from ``end`` until the store was at the head."""
    lags = [s[3] for s in sampler.samples if start <= s[0] <= end]
    return {"lag_samples": len(lags),
            "lag_p50_s": round(_percentile(lags, 0.50), 3),
            "lag_p99_s": round(_percentile(lags, 0.99), 3),
            "lag_max_s": round(max(lags, default=0.0), 3),
            "catch_up_s": round(caught_up_at - end, 3) if caught_up_at is not None else -1}


def wait_caught_up(sampler: Sampler, follower: Follower, *, after: float,
                   timeout: float = 300) -> float:
    """The first sample time after ``after`` with the store at the head (the head no longer
    moving: the workers are done or waiting)."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        hits = [s[0] for s in sampler.samples if s[0] >= after and s[2] >= s[1]]
        if hits:
            return hits[0]
        if not follower.alive():
            raise RuntimeError("`graph follow` exited before it caught up")
        time.sleep(SAMPLE_EVERY)
    raise RuntimeError(f"`graph follow` did not catch up within {timeout:g} s")


def embedded_projected(home: Path) -> int:
    """The embedded store's watermark while no process writes it (between rounds)."""
    from cradle_kg.home import Home
    from cradle_kg.storage.oxigraph import OxigraphStore

    path = Home(home).graph
    if not path.exists():
        return 0
    # not close(): it flushes, which a read-only pyoxigraph store refuses; dropping the
    # reference closes it
    return OxigraphStore(path, read_only=True).projected_seq()


__all__ = ["Follower", "Sampler", "embedded_projected", "lag_figures", "wait_caught_up"]
