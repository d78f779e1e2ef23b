"""The pack's durable state: one JSON file under the home, written atomically under a lock.

    {
      "envs": {"staging": {"commit", "pid", "port", "checkout", "started_at", "history"}, ...},
      "idempotency": {key: {"tool", "env", "commit", "status", "result", ...}},
      "incidents": {id: {...}},
      "fix_locks": {incident_id: {"fix_id", "commit", "acquired_at"}},
      "verifications": [{"id", "verifier", "env", "commit", "incident_id", "status", ...}]
    }

Every write goes to a temporary file in the same directory, is fsynced, then
``os.replace``d over ``state.json``: a reader sees the old state or the new one, never
half of one. Read-modify-write cycles hold an exclusive ``flock`` on ``state.lock``
(threads and processes alike), so concurrent updates never lose each other.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cradle_kg.packs.sdk import JournalError

State = dict[str, Any]

SECTIONS: tuple[tuple[str, type[dict[str, Any]] | type[list[Any]]], ...] = (
    ("envs", dict),
    ("idempotency", dict),
    ("incidents", dict),
    ("fix_locks", dict),
    ("verifications", list),
)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def empty_state() -> State:
    return {name: kind() for name, kind in SECTIONS}


def atomic_write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically (temp file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


class StateStore:
    """The state file of one UptimeHarbor home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / "state.json"
        self.lock_path = home / "state.lock"

    def read(self) -> State:
        """A snapshot of the state (a fresh copy: mutating it changes nothing on disk)."""
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return empty_state()
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise JournalError(f"state file `{self.path}` is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise JournalError(f"state file `{self.path}` is not a JSON object")
        for name, kind in SECTIONS:
            data.setdefault(name, kind())
        return data

    @contextlib.contextmanager
    def transaction(self) -> Iterator[State]:
        """Read, let the caller mutate, write back atomically; all under the lock.

        If the block raises, nothing is written.
        """
        with file_lock(self.lock_path):
            state = self.read()
            yield state
            atomic_write_json(self.path, state)

    def env(self, name: str) -> dict[str, Any]:
        env = self.read()["envs"].get(name)
        return dict(env) if isinstance(env, dict) else {}

    def env_lock(self, name: str) -> contextlib.AbstractContextManager[None]:
        """Serialises the operations (deploy, rollback, stop) on one environment."""
        return file_lock(self.home / "locks" / f"env-{name}.lock")
