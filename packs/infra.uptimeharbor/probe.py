"""The independent probe: plain HTTP GETs on a running UptimeHarbor, with a timeout.

It knows nothing of the deploy tool. Verifiers call it with the port read from the
state file; they never look at what a deploy call returned.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, TypedDict

from cradle_kg.packs.sdk import tls_context

from .state import now_iso

if TYPE_CHECKING:  # httpx is imported by a probe, not with the pack (its import also
    import httpx  # loads httpx's own command line when rich/click are installed: ~60 ms)

DEFAULT_TIMEOUT_S = 2.0


class CheckResult(TypedDict):
    path: str
    ok: bool
    status_code: int | None
    error: str | None
    latency_ms: float


class ProbeResult(TypedDict):
    healthy: bool
    status_code: int | None
    commit: str | None
    latency_ms: float
    checked_at: str
    url: str
    reachable: bool
    timed_out: bool
    reason: str | None
    checks: list[CheckResult]


def _get(client: httpx.Client, url: str) -> tuple[httpx.Response | None, str | None, bool]:
    import httpx

    try:
        return client.get(url), None, False
    except httpx.TimeoutException as exc:
        return None, f"timeout: {exc.__class__.__name__}", True
    except httpx.HTTPError as exc:
        return None, f"{exc.__class__.__name__}: {exc}", False


def probe(base_url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> ProbeResult:
    """GET ``/health`` and ``/`` on ``base_url``.

    ``healthy`` holds only when ``/health`` answers 200 with ``status == "ok"`` and the
    user-facing page ``/`` answers 200 and names the service.
    """
    checks: list[CheckResult] = []
    started = time.perf_counter()
    commit: str | None = None
    reason: str | None = None
    health_status: int | None = None
    timed_out = False
    reachable = False
    import httpx

    # the shared TLS context: a client's own would load the CA bundle per probe (~18 ms)
    with httpx.Client(timeout=timeout_s, trust_env=False, verify=tls_context()) as client:
        t0 = time.perf_counter()
        resp, err, to = _get(client, f"{base_url}/health")
        timed_out |= to
        health_ok = False
        if resp is not None:
            reachable = True
            health_status = resp.status_code
            body: Any = None
            try:
                body = json.loads(resp.text)
            except ValueError:
                err = "health body is not JSON"
            if isinstance(body, dict):
                commit = body.get("commit") if isinstance(body.get("commit"), str) else None
                health_ok = resp.status_code == 200 and body.get("status") == "ok"
                if not health_ok:
                    err = str(body.get("reason") or f"status {resp.status_code}")
        checks.append(
            {
                "path": "/health",
                "ok": health_ok,
                "status_code": health_status,
                "error": err,
                "latency_ms": round((time.perf_counter() - t0) * 1000, 2),
            }
        )
        reason = err
        t0 = time.perf_counter()
        resp, err, to = _get(client, f"{base_url}/")
        timed_out |= to
        page_ok = False
        if resp is not None:
            reachable = True
            page_ok = resp.status_code == 200 and "UptimeHarbor" in resp.text
            if not page_ok:
                err = f"user page answered {resp.status_code}"
        checks.append(
            {
                "path": "/",
                "ok": page_ok,
                "status_code": resp.status_code if resp is not None else None,
                "error": err,
                "latency_ms": round((time.perf_counter() - t0) * 1000, 2),
            }
        )
        reason = reason or err
    return {
        "healthy": health_ok and page_ok,
        "status_code": health_status,
        "commit": commit,
        "latency_ms": round((time.perf_counter() - started) * 1000, 2),
        "checked_at": now_iso(),
        "url": base_url,
        "reachable": reachable,
        "timed_out": timed_out,
        "reason": None if health_ok and page_ok else reason,
        "checks": checks,
    }


def base_url_for(env_state: dict[str, Any]) -> str | None:
    """The URL of an environment as the state file records it, if it is running."""
    port = env_state.get("port")
    if not isinstance(port, int) or env_state.get("pid") is None:
        return None
    return f"http://127.0.0.1:{port}"
