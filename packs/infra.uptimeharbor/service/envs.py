"""The environment manager: build, start, stop and switch UptimeHarbor per environment.

Each environment (``staging``, ``production``) runs one child process on 127.0.0.1,
started in its own session (so a stop kills the whole process group), from a checkout
made with ``git archive`` under ``<home>/envs/<env>/<sha12>``. The state file records
env -> commit, pid, port, checkout and a history of what ran there.

This is the mechanism, not the governance: the governed path is ``tools.ops``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cradle_kg.packs.sdk import InputError, ToolError, exclusive_file, tls_context

from ..gitutil import export_tree, git, resolve_commit
from ..state import StateStore, now_iso

ENVIRONMENTS = ("staging", "production")
READY_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0

#: children started by this interpreter, so any manager instance can reap them
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def check_env(env: str) -> str:
    if env not in ENVIRONMENTS:
        raise InputError(f"unknown environment `{env}`", hint="one of: staging, production")
    return env


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _gone(pid: int) -> bool:
    child = _CHILDREN.get(pid)
    if child is not None:
        if child.poll() is not None:
            _CHILDREN.pop(pid, None)
            return True
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    status = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        return status.read_text().split(") ", 1)[1].startswith("Z")
    return True


def kill_group(pid: int, *, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the process group of ``pid``, then SIGKILL it if it outlives ``timeout_s``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if _gone(pid):
                return
            time.sleep(0.02)
    if not _gone(pid):
        raise ToolError(f"process group `{pid}` survived SIGKILL")


def _built(dest: Path, sha: str) -> bool:
    """``dest`` is a complete checkout of ``sha`` (its ``REVISION`` says so)."""
    try:
        return (dest / "REVISION").read_text(encoding="utf-8").strip() == sha
    except OSError:
        return False


class EnvManager:
    """Builds and runs UptimeHarbor environments for one home and one repository."""

    def __init__(
        self,
        home: Path,
        repo: Path,
        *,
        python: str = sys.executable,
        ready_timeout_s: float = READY_TIMEOUT_S,
    ) -> None:
        self.home = home
        self.repo = repo
        self.python = python
        self.ready_timeout_s = ready_timeout_s
        self.store = StateStore(home)

    # -- build ----------------------------------------------------------------------
    def resolve(self, commit: str) -> str:
        return resolve_commit(self.repo, commit)

    def build(self, env: str, commit: str) -> Path:
        """A checkout of ``commit`` for ``env`` (reused when already built).

        Builders of one checkout take turns (an ``flock`` in ``envs/.locks``, across threads
        and processes): a checkout is only ever replaced whole (``os.replace`` of a complete
        tree), and only by a builder that found it missing, partial or foreign under the
        lock — so one whose ``REVISION`` names the commit is complete and stays. Before,
        four concurrent builds of one commit could remove each other's finished checkout
        while another read its ``REVISION`` (a ``FileNotFoundError``, seen under load)."""
        check_env(env)
        sha = self.resolve(commit)
        dest = self.home / "envs" / env / sha[:12]
        if _built(dest, sha):
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        locks = self.home / "envs" / ".locks"  # apart: an env's folder holds its checkouts
        locks.mkdir(exist_ok=True)
        with exclusive_file(locks / f"{env}-{dest.name}"):
            if _built(dest, sha):  # another builder's, finished while this one waited
                return dest
            tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.building-", dir=dest.parent))
            try:
                export_tree(self.repo, sha, tmp)
                shutil.rmtree(dest, ignore_errors=True)  # a partial or foreign checkout
                os.replace(tmp, dest)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return dest

    # -- run ------------------------------------------------------------------------
    def _spawn(self, env: str, checkout: Path) -> tuple[int, int]:
        port_file = checkout / f".port-{env}"
        port_file.unlink(missing_ok=True)
        log = open(checkout / f"service-{env}.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            child = subprocess.Popen(
                [self.python, "app.py", "--host", "127.0.0.1", "--port", "0",
                 "--port-file", str(port_file), "--env", env],
                cwd=checkout,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "UPTIMEHARBOR_ENV": env},
            )
        finally:
            log.close()
        _CHILDREN[child.pid] = child
        try:
            port = self._wait_ready(child, port_file)
        except BaseException:
            kill_group(child.pid)
            raise
        return child.pid, port

    def _wait_ready(self, child: subprocess.Popen[bytes], port_file: Path) -> int:
        deadline = time.monotonic() + self.ready_timeout_s
        port: int | None = None
        import httpx  # here, not with the pack: its import costs ~60 ms of `tools list`

        with httpx.Client(timeout=0.5, trust_env=False, verify=tls_context()) as client:
            while time.monotonic() < deadline:
                if child.poll() is not None:
                    raise ToolError(
                        f"uptimeharbor exited during start with code {child.returncode}"
                    )
                if port is None and port_file.exists():
                    port = int(port_file.read_text(encoding="utf-8"))
                if port is not None:
                    with contextlib.suppress(httpx.HTTPError):
                        client.get(f"http://127.0.0.1:{port}/health")
                        return port  # any answer, even a 500, means the server is up
                time.sleep(0.02)
        raise ToolError(f"uptimeharbor not ready within {self.ready_timeout_s}s")

    def start(self, env: str, commit: str, *, key: str | None = None) -> dict[str, Any]:
        """Start ``commit`` in ``env`` (which must not be running); returns its env state."""
        check_env(env)
        sha = self.resolve(commit)
        if self.store.env(env).get("pid") is not None:
            raise ToolError(f"environment `{env}` is already running")
        checkout = self.build(env, sha)
        pid, port = self._spawn(env, checkout)
        with self.store.transaction() as state:
            entry = state["envs"].setdefault(env, {"history": []})
            entry.update(
                commit=sha, pid=pid, port=port, checkout=str(checkout), started_at=now_iso()
            )
            entry.setdefault("history", []).append(
                {"commit": sha, "at": entry["started_at"], "key": key}
            )
            return dict(entry)

    def stop(self, env: str) -> None:
        """Stop ``env`` (a no-op when it is not running); kills its process group."""
        check_env(env)
        current = self.store.env(env)
        pid = current.get("pid")
        if isinstance(pid, int) and str(current.get("checkout", "")) in _cmdline(pid):
            kill_group(pid)
        with self.store.transaction() as state:
            entry = state["envs"].setdefault(env, {"history": []})
            entry.update(pid=None, port=None)

    def switch(self, env: str, commit: str, *, key: str | None = None) -> dict[str, Any]:
        """Replace what runs in ``env`` by ``commit``; returns the new env state.

        The new checkout is built before the old process is stopped, so a bad build
        leaves the old version running.
        """
        check_env(env)
        sha = self.resolve(commit)
        self.build(env, sha)
        self.stop(env)
        return self.start(env, sha, key=key)

    def stop_all(self) -> None:
        for env in ENVIRONMENTS:
            self.stop(env)

    def head(self) -> str:
        return git(self.repo, "rev-parse", "HEAD")
