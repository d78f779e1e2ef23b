"""The pack's tools as plain typed functions (contracts in ``contracts.py``).

Keyed idempotency for ``deploy`` and ``rollback``: before the side effect an intent
record ``{status: "started"}`` is written under the key; after it, ``completed`` with
the result. The same key again returns the recorded result (``replayed: True``) and
never deploys twice; a key found ``started`` (a crash between intent and completion)
is refused until ``reconcile`` has asked the environment what really happened — it is
never blindly replayed. ``lookup`` is the read-only half of that reconciliation.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cradle_kg.packs.sdk import IdempotencyConflictError, InputError, ToolError, ToolRefused

from ..gitutil import export_tree
from ..harbor import Harbor, previous_verified_commit
from ..probe import base_url_for, probe
from ..service.envs import check_env
from ..state import now_iso

TEST_TIMEOUT_S = 60.0
MAX_OUTPUT = 8000


def detect_outage(h: Harbor, env: str) -> dict[str, Any]:
    """Probe ``env`` (read-only). ``outage`` is true when the probe is not healthy."""
    env_state = h.store.env(check_env(env))
    url = base_url_for(env_state)
    if url is None:
        return {
            "env": env,
            "outage": True,
            "healthy": False,
            "status_code": None,
            "commit": None,
            "latency_ms": 0.0,
            "checked_at": now_iso(),
            "reachable": False,
            "reason": "environment not running",
            "checks": [],
        }
    result = probe(url)
    return {"env": env, "outage": not result["healthy"], **result}


def run_tests(h: Harbor, commit: str, *, timeout_s: float = TEST_TIMEOUT_S) -> dict[str, Any]:
    """Run the repository's unit tests for ``commit`` in a throwaway checkout.

    An observation only: it says what the tests said, never that an incident is resolved.
    """
    sha = h.envs.resolve(commit)
    sandbox = h.home / "sandbox"
    sandbox.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f"tests-{sha[:12]}-", dir=sandbox))
    started = time.perf_counter()
    try:
        export_tree(h.repo, sha, workdir)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "unittest", "discover", "-s", "tests"],
                cwd=workdir,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
                start_new_session=True,
                check=False,
            )
            outcome = "passed" if proc.returncode == 0 else "failed"
            returncode: int | None = proc.returncode
            output = (proc.stdout + proc.stderr)[-MAX_OUTPUT:]
        except subprocess.TimeoutExpired as exc:
            outcome, returncode = "error", None
            output = f"timed out after {timeout_s}s: {exc}"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return {
        "kind": "observation",
        "commit": sha,
        "outcome": outcome,
        "returncode": returncode,
        "output": output,
        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
    }


def _check_key(key: str) -> str:
    if not isinstance(key, str) or not 8 <= len(key) <= 200:
        raise InputError("idempotency key must be a string of 8 to 200 characters")
    return key


def _keyed(
    h: Harbor,
    key: str,
    tool: str,
    env: str,
    commit: str | None,
    effect: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """Run ``effect`` at most once per ``key`` (see the module docstring)."""
    with h.store.transaction() as state:
        record = state["idempotency"].get(key)
        if record is not None:
            if record["tool"] != tool or record["env"] != env or (
                commit is not None and record["commit"] != commit
            ):
                raise IdempotencyConflictError(
                    f"idempotency key `{key}` was used for {record['tool']} of "
                    f"`{record['commit']}` to `{record['env']}`"
                )
            if record["status"] == "completed":
                return {**record["result"], "replayed": True}
            if record["status"] == "started":
                raise ToolError(
                    f"{tool} with key `{key}` is in flight or was interrupted",
                    hint="reconcile the key (lookup / reconcile) before retrying",
                )
        state["idempotency"][key] = {
            "tool": tool,
            "env": env,
            "commit": commit,
            "status": "started",
            "started_at": now_iso(),
        }
    try:
        with h.store.env_lock(env):
            result = effect()
    except BaseException as exc:
        with h.store.transaction() as state:
            state["idempotency"][key].update(status="failed", error=str(exc), ended_at=now_iso())
        raise
    with h.store.transaction() as state:
        state["idempotency"][key].update(
            status="completed", result=result, commit=result["commit"], ended_at=now_iso()
        )
    return result


def deploy(
    h: Harbor, env: str, commit: str, idempotency_key: str, *, dry_run: bool = False
) -> dict[str, Any]:
    """Replace what runs in ``env`` by ``commit`` (keyed; compensated by ``rollback``)."""
    check_env(env)
    _check_key(idempotency_key)
    sha = h.envs.resolve(commit)
    previous = h.store.env(env).get("commit")
    if dry_run:
        return {"env": env, "commit": sha, "previous_commit": previous,
                "idempotency_key": idempotency_key, "replayed": False, "dry_run": True}

    def effect() -> dict[str, Any]:
        before = h.store.env(env).get("commit")
        entry = h.envs.switch(env, sha, key=idempotency_key)
        return {"env": env, "commit": sha, "previous_commit": before,
                "idempotency_key": idempotency_key, "replayed": False, "dry_run": False,
                "pid": entry["pid"], "port": entry["port"]}

    return _keyed(h, idempotency_key, "deploy", env, sha, effect)


def rollback(
    h: Harbor, env: str, idempotency_key: str, *, dry_run: bool = False
) -> dict[str, Any]:
    """Compensation: put back the previous commit that was verified in ``env``."""
    check_env(env)
    _check_key(idempotency_key)
    state = h.snapshot()
    done = state["idempotency"].get(idempotency_key)
    if done is not None and done["status"] == "completed" and done["tool"] == "rollback" \
            and done["env"] == env:
        return {**done["result"], "replayed": True}  # the target may have moved on since
    target = previous_verified_commit(state, env)
    current = state["envs"].get(env, {}).get("commit")
    if target is None:
        # before anything is written: a typed refusal (tests/security/test_557)
        raise ToolRefused("no_verified_commit",
                          f"no previously verified commit to roll `{env}` back to")
    if dry_run:
        return {"env": env, "commit": target, "previous_commit": current,
                "idempotency_key": idempotency_key, "replayed": False, "dry_run": True}

    def effect() -> dict[str, Any]:
        entry = h.envs.switch(env, target, key=idempotency_key)
        return {"env": env, "commit": target, "previous_commit": current,
                "idempotency_key": idempotency_key, "replayed": False, "dry_run": False,
                "pid": entry["pid"], "port": entry["port"]}

    return _keyed(h, idempotency_key, "rollback", env, None, effect)


def lookup(h: Harbor, idempotency_key: str) -> dict[str, Any]:
    """Did the side effect recorded under ``idempotency_key`` happen? (read-only)

    Asks the environment, not the record: the key must appear in the environment's
    history (written only once the new process answered) to count as happened.
    """
    state = h.snapshot()
    record = state["idempotency"].get(idempotency_key)
    if record is None:
        return {"idempotency_key": idempotency_key, "found": False, "happened": False,
                "status": None, "env": None, "commit": None}
    env = record["env"]
    entry = state["envs"].get(env, {})
    ran = [i for i in entry.get("history", []) if i.get("key") == idempotency_key]
    url = base_url_for(entry)
    live = probe(url)["commit"] if url is not None else None
    return {
        "idempotency_key": idempotency_key,
        "found": True,
        "happened": bool(ran),
        "status": record["status"],
        "env": env,
        "commit": ran[-1]["commit"] if ran else record.get("commit"),
        "current_commit": entry.get("commit"),
        "live_commit": live,
    }


def reconcile(h: Harbor, idempotency_key: str) -> dict[str, Any]:
    """Settle a key left ``started`` by a crash, from what ``lookup`` finds in the env.

    happened -> ``completed`` (a retry replays the result); not happened -> ``abandoned``
    (a retry with the same key may run the effect).
    """
    found = lookup(h, idempotency_key)
    if not found["found"] or found["status"] != "started":
        return found
    with h.store.transaction() as state:
        record = state["idempotency"][idempotency_key]
        if found["happened"]:
            record.update(
                status="completed",
                reconciled_at=now_iso(),
                result={"env": record["env"], "commit": found["commit"], "previous_commit": None,
                        "idempotency_key": idempotency_key, "replayed": False,
                        "dry_run": False, "pid": None, "port": None},
            )
        else:
            record.update(status="abandoned", reconciled_at=now_iso())
    return lookup(h, idempotency_key)


TOOLS: dict[str, Callable[..., dict[str, Any]]] = {
    "infra.detect_outage": detect_outage,
    "infra.run_tests": run_tests,
    "infra.deploy": deploy,
    "infra.rollback": rollback,
    "infra.lookup": lookup,
}
