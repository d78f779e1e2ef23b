"""The pack's context object and its records: incidents, fix locks, verifications.

``Harbor`` bundles a home directory (state file, checkouts, logs) and the repository
UptimeHarbor is deployed from. Tools, verifiers and scenario steps all take one.

The pure queries at the bottom read a state *snapshot* (a dict) and are what the
closed-world validators are built on.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cradle_kg.packs.sdk import InputError, UnknownNameError

from .service.envs import EnvManager, check_env
from .state import State, StateStore, now_iso

VERDICTS = ("verified", "failed", "inconclusive")


@dataclass
class Harbor:
    home: Path
    repo: Path
    envs: EnvManager = field(init=False)
    store: StateStore = field(init=False)

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.envs = EnvManager(self.home, self.repo)
        self.store = self.envs.store

    def snapshot(self) -> State:
        return self.store.read()


# -- incidents ------------------------------------------------------------------------
def open_incident(h: Harbor, env: str, observation: Mapping[str, Any]) -> dict[str, Any]:
    """Record an incident from a *failing* probe; the probe becomes the incident's test."""
    check_env(env)
    if observation["healthy"]:
        raise InputError("cannot open an incident from a healthy probe")
    incident_id = f"inc-{uuid.uuid4().hex[:10]}"
    failing = [c["path"] for c in observation["checks"] if not c["ok"]]
    with h.store.transaction() as state:
        incident = {
            "id": incident_id,
            "env": env,
            "status": "open",
            "opened_at": now_iso(),
            "failing_commit": state["envs"].get(env, {}).get("commit"),
            "original_probe": {"failing_paths": failing, "observation": dict(observation)},
        }
        state["incidents"][incident_id] = incident
    return incident


def get_incident(h: Harbor, incident_id: str) -> dict[str, Any]:
    incident = h.snapshot()["incidents"].get(incident_id)
    if not isinstance(incident, dict):
        raise UnknownNameError(f"unknown incident `{incident_id}`")
    return incident


def set_incident_status(h: Harbor, incident_id: str, status: str, **extra: Any) -> None:
    with h.store.transaction() as state:
        incident = state["incidents"].get(incident_id)
        if incident is None:
            raise UnknownNameError(f"unknown incident `{incident_id}`")
        incident.update(status=status, updated_at=now_iso(), **extra)


# -- fix locks: one incident, one fix in flight ------------------------------------------
def lock_holds(lock: dict[str, Any] | None, fix_id: str, commit: Any) -> bool:
    """Whether an incident's fix lock (its record, None: none) is held by ``fix_id`` for
    ``commit``: the fix and the commit its claim names (a record naming no commit, written
    by hand, holds any) — the claim, the deploy and their verifier read the same
    (tests/security/test_435)."""
    return lock is not None and lock.get("fix_id") == fix_id \
        and lock.get("commit") in (None, commit)


def acquire_fix_lock(h: Harbor, incident_id: str, fix_id: str, commit: str) -> bool:
    """Take the incident's fix lock for ``fix_id`` and ``commit``; False when another fix,
    or this fix for another commit, holds it.

    Atomic under the state lock, so two concurrent proposals cannot both win.
    """
    with h.store.transaction() as state:
        if incident_id not in state["incidents"]:
            raise UnknownNameError(f"unknown incident `{incident_id}`")
        held = state["fix_locks"].get(incident_id)
        if held is not None:
            return lock_holds(held, fix_id, commit)
        state["fix_locks"][incident_id] = {
            "fix_id": fix_id,
            "commit": commit,
            "acquired_at": now_iso(),
        }
        return True


#: ``release_fix_lock``'s ``commit`` when any commit of the fix will do
ANY_COMMIT: Any = object()


def release_fix_lock(h: Harbor, incident_id: str, fix_id: str,
                     commit: Any = ANY_COMMIT) -> bool:
    """Release the lock if ``fix_id`` holds it — for ``commit`` when one is given (a
    rollback gives the claim back only when what it took out is the fix's commit:
    tests/security/test_504); returns whether it did."""
    with h.store.transaction() as state:
        held = state["fix_locks"].get(incident_id)
        if held is None or held["fix_id"] != fix_id:
            return False
        if commit is not ANY_COMMIT and not lock_holds(held, fix_id, commit):
            return False
        del state["fix_locks"][incident_id]
        return True


# -- verifications --------------------------------------------------------------------
def record_verification(
    h: Harbor,
    *,
    verifier: str,
    status: str,
    detail: Mapping[str, Any],
    env: str,
    commit: str | None,
    incident_id: str | None = None,
) -> dict[str, Any]:
    if status not in VERDICTS:
        raise InputError(f"unknown verification status `{status}`")
    record = {
        "id": f"ver-{uuid.uuid4().hex[:10]}",
        "verifier": verifier,
        "status": status,
        "env": env,
        "commit": commit,
        "incident_id": incident_id,
        "at": now_iso(),
        "detail": dict(detail),
    }
    with h.store.transaction() as state:
        state["verifications"].append(record)
    return record


# -- pure queries over a state snapshot ---------------------------------------------------
def verifications_for(
    state: Mapping[str, Any],
    *,
    env: str,
    commit: str,
    verifier: str | None = None,
    incident_id: str | None = None,
    status: str = "verified",
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for v in state.get("verifications", []):
        if v.get("env") != env or v.get("commit") != commit or v.get("status") != status:
            continue
        if verifier is not None and v.get("verifier") != verifier:
            continue
        if incident_id is not None and v.get("incident_id") != incident_id:
            continue
        out.append(v)
    return out


def staging_resolution(
    state: Mapping[str, Any], commit: str, incident_id: str
) -> dict[str, Any] | None:
    """The recorded, VERIFIED staging ``incident_resolved`` of ``commit`` for this incident."""
    found = verifications_for(
        state, env="staging", commit=commit, verifier="incident_resolved", incident_id=incident_id
    )
    return found[-1] if found else None


def is_verified_in(state: Mapping[str, Any], env: str, commit: str) -> bool:
    """Whether ``commit`` ever passed the post-deploy health verification in ``env``."""
    return bool(verifications_for(state, env=env, commit=commit, verifier="service_healthy"))


def previous_verified_commit(state: Mapping[str, Any], env: str) -> str | None:
    """The latest commit that ran in ``env`` before the current one and was verified there."""
    entry = state.get("envs", {}).get(env, {})
    current = entry.get("commit")
    for item in reversed(entry.get("history", [])):
        commit = item.get("commit")
        if commit and commit != current and is_verified_in(state, env, commit):
            return str(commit)
    return None
