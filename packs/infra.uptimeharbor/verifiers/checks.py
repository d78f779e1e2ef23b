"""Independent verifiers: they read the probe, the state file and git — never a tool's output.

Each returns ``(status, detail)`` with status one of ``verified``, ``failed``,
``inconclusive``. Inconclusive means "could not tell" (nothing running, timeout): it is
never treated as verified.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from cradle_kg.packs.sdk import InputError

from ..gitutil import resolve_commit
from ..harbor import Harbor
from ..probe import ProbeResult, base_url_for, probe
from ..service.envs import check_env

Status = Literal["verified", "failed", "inconclusive"]
Verdict = tuple[Status, dict[str, Any]]


def _probe_env(h: Harbor, env: str) -> tuple[ProbeResult | None, dict[str, Any]]:
    check_env(env)
    env_state = h.store.env(env)
    url = base_url_for(env_state)
    if url is None:
        return None, {"env": env, "reason": "environment not running (no pid/port in state)"}
    return probe(url), {"env": env, "state_commit": env_state.get("commit")}


def service_healthy(h: Harbor, env: str) -> Verdict:
    """The service answers 200 on ``/health`` and on the user page ``/``."""
    result, detail = _probe_env(h, env)
    if result is None:
        return "inconclusive", detail
    detail["probe"] = dict(result)
    if result["healthy"]:
        return "verified", detail
    if result["timed_out"]:
        return "inconclusive", {**detail, "reason": "probe timed out"}
    return "failed", {**detail, "reason": result["reason"] or "unhealthy"}


def incident_resolved(h: Harbor, incident: Mapping[str, Any], env: str) -> Verdict:
    """The probe that originally FAILED for ``incident`` now passes in ``env``.

    Green tests, a deploy that "succeeded" or a healthy neighbour path do not count:
    only the paths recorded as failing when the incident was opened are re-checked.
    """
    original = incident.get("original_probe") or {}
    failing = list(original.get("failing_paths") or [])
    base = {"incident_id": incident.get("id"), "failing_paths": failing}
    if not failing:
        return "inconclusive", {**base, "reason": "the incident has no recorded failing probe"}
    result, detail = _probe_env(h, env)
    detail.update(base)
    if result is None:
        return "inconclusive", detail
    detail["probe"] = dict(result)
    by_path = {c["path"]: c for c in result["checks"]}
    still = [p for p in failing if not (p in by_path and by_path[p]["ok"])]
    detail["still_failing"] = still
    if not still:
        return "verified", detail
    if result["timed_out"]:
        return "inconclusive", {**detail, "reason": "probe timed out"}
    return "failed", {**detail, "reason": f"original failing probe still fails: {still}"}


def deployed_commit_matches(h: Harbor, env: str, commit: str) -> Verdict:
    """``env`` runs ``commit``: per git (resolution), the state file, the checkout and live."""
    try:
        expected = resolve_commit(h.repo, commit)
    except InputError as exc:
        return "failed", {"env": env, "commit": commit, "reason": exc.message}
    env_state = h.store.env(check_env(env))
    checkout = env_state.get("checkout")
    on_disk: str | None = None
    if isinstance(checkout, str):
        try:
            on_disk = (Path(checkout) / "REVISION").read_text(encoding="utf-8").strip()
        except OSError:
            on_disk = None
    result, _ = _probe_env(h, env)
    sources = {
        "state_file": env_state.get("commit"),
        "checkout": on_disk,
        "live": result["commit"] if result is not None else None,
    }
    detail: dict[str, Any] = {"env": env, "expected": expected, "sources": sources}
    mismatched = {k: v for k, v in sources.items() if v is not None and v != expected}
    if mismatched:
        return "failed", {**detail, "reason": f"commit mismatch: {sorted(mismatched)}"}
    if sources["live"] is None:
        return "inconclusive", {**detail, "reason": "the running service did not report a commit"}
    if sources["state_file"] is None:
        return "inconclusive", {**detail, "reason": "no commit recorded in the state file"}
    return "verified", detail


VERIFIERS = {
    "service_healthy": service_healthy,
    "incident_resolved": incident_resolved,
    "deployed_commit_matches": deployed_commit_matches,
}
