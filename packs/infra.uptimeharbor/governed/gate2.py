"""Gate-2 verifiers: independent reads of the probe, git and the state file."""

from __future__ import annotations

from typing import Any

from cradle_kg.packs.sdk import (
    PackContext,
    VerificationCheck,
    Verifier,
    VerifierReport,
    VerifyRequest,
    check,
    read_back,
    report,
    verifier,
)

from ..harbor import Harbor, get_incident, is_verified_in, lock_holds, record_verification
from ..probe import base_url_for, probe
from ..verifiers.checks import deployed_commit_matches, incident_resolved, service_healthy
from .models import DeployInput, FixInput, ResolveInput, RollbackInput
from .worlds import args_of, harbor_of

SOURCE = "uptimeharbor probe + git + state file"


def _check(name: str, verdict: tuple[str, dict[str, Any]]) -> VerificationCheck:
    status, detail = verdict
    reason = detail.get("reason")
    return check(name, status, str(reason) if reason else status)


def _running(h: Harbor, env: str) -> VerificationCheck:
    url = base_url_for(h.store.env(env))
    if url is None:
        return check("resource_exists", False, f"`{env}` is not running")
    seen = probe(url)
    return check("resource_exists", bool(seen["reachable"]),
                 f"`{env}` answers at {url}" if seen["reachable"] else f"`{env}` does not answer")


def _report(ctx: PackContext, checks: list[VerificationCheck],
            evidence: dict[str, Any], changed: list[str] | None = None) -> VerifierReport:
    return report(checks, read_at=ctx.clock(), evidence=evidence, source=SOURCE,
                  changed=changed)


def _changed(h: Harbor, target: str, moved: bool) -> list[str]:
    """What the verifier observed changed, by its own probes (not the tool's report): the
    targeted environment when its live commit moved as intended, and any other environment
    of this harbor whose live commit is not the one the state file records for it."""
    world = target.split("/", 1)[0]
    out = [target] if moved else []
    for env in sorted(h.snapshot()["envs"]):
        name = f"{world}/{env}"
        if name == target:
            continue
        record = h.store.env(env)
        url = base_url_for(record)
        live = probe(url)["commit"] if url else None
        if live is not None and live != record.get("commit"):
            out.append(name)
    return out


def _record(h: Harbor, name: str, verdict: tuple[str, dict[str, Any]], env: str,
            commit: str | None, incident_id: str | None) -> str:
    status, detail = verdict
    return str(record_verification(h, verifier=name, status=status, detail=detail, env=env,
                                   commit=commit, incident_id=incident_id)["id"])


@verifier("infra.deploy-verified")
def deploy_verified(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    """Commit matches (git, state, checkout, live), service healthy, the incident's probe."""
    args: DeployInput = args_of(req, DeployInput)
    h = harbor_of(ctx, req.action.target)
    incident = get_incident(h, args.incident_id)
    reads = {
        "deployed_commit_matches": deployed_commit_matches(h, args.env, args.commit),
        "service_healthy": service_healthy(h, args.env),
        "incident_resolved": incident_resolved(h, incident, args.env),
    }
    # a verification names the commit it saw running: the one asked for only when git, the
    # state file, the checkout and the live service all say it runs — a dry run, or a deploy
    # whose commit is not the one running, proves nothing about it (tests/security/test_433)
    seen = args.commit if reads["deployed_commit_matches"][0] == "verified" else None
    recorded = {name: _record(h, name, verdict, args.env, seen, args.incident_id)
                for name, verdict in reads.items()}
    matches = _check("expected_state", reads["deployed_commit_matches"])
    return _report(ctx, [_running(h, args.env), matches,
                         _check("service-healthy", reads["service_healthy"]),
                         _check("incident-resolved", reads["incident_resolved"])],
                   {"env": args.env, "commit": args.commit, "recorded": recorded,
                    "statuses": {k: v[0] for k, v in reads.items()}},
                   changed=_changed(h, req.action.target,
                                    reads["deployed_commit_matches"][0] == "verified"))


@verifier("infra.rollback-verified")
def rollback_verified(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    """The env runs a commit verified there before (not the one rolled back), healthy."""
    args: RollbackInput = args_of(req, RollbackInput)
    h = harbor_of(ctx, req.action.target)
    live_url = base_url_for(h.store.env(args.env))
    live = probe(live_url)["commit"] if live_url else None
    healthy = service_healthy(h, args.env)
    state = h.snapshot()
    good = live is not None and live != args.commit and is_verified_in(state, args.env, live)
    matches = deployed_commit_matches(h, args.env, live) if live else (
        "inconclusive", {"reason": "no live commit"})
    _record(h, "service_healthy", healthy, args.env, live, args.incident_id)
    return _report(ctx, [
        _running(h, args.env),
        check("expected_state", good,
              f"`{args.env}` runs `{str(live)[:12]}`, verified there before" if good
              else f"`{args.env}` runs `{live}`, not a previously verified commit"),
        _check("deployed-commit-matches", matches),
        _check("service-healthy", healthy)],
        {"env": args.env, "live_commit": live, "rolled_back_from": args.commit},
        changed=_changed(h, req.action.target, live is not None and live != args.commit))


@verifier("infra.resolution-verified")
def resolution_verified(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    """The incident's original failing probe passes now, and the record says resolved."""
    args: ResolveInput = args_of(req, ResolveInput)
    h = harbor_of(ctx, req.action.target)
    incident = get_incident(h, args.incident_id)
    env = str(incident["env"])
    verdict = incident_resolved(h, incident, env)
    return _report(ctx, [
        *read_back(True, incident["status"] == "resolved",
                   exists_detail=f"incident `{args.incident_id}` recorded",
                   state_detail=f"incident status `{incident['status']}`"),
        _check("incident-resolved", verdict)],
        {"incident_id": args.incident_id, "env": env, "probe": verdict[0]})


@verifier("infra.fix-claimed")
def fix_claimed(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
    args: FixInput = args_of(req, FixInput)
    h = harbor_of(ctx, req.action.target)
    lock = h.snapshot()["fix_locks"].get(args.incident_id)
    held = lock_holds(lock, args.fix_id, args.commit)
    return _report(ctx, [*read_back(
        bool(lock), held, exists_detail="the incident has a fix claim" if lock else "no claim",
        state_detail=f"claim held by `{lock.get('fix_id') if lock else None}`")],
        {"incident_id": args.incident_id, "lock": lock})


def _single(name: str, verifier_id: str) -> Verifier:
    """One of the pack's verifiers alone, over a deploy's intended env, commit, incident."""
    def verify(ctx: PackContext, req: VerifyRequest) -> VerifierReport:
        args = req.arguments
        h = harbor_of(ctx, req.action.target)
        env = str(getattr(args, "env", None) or "production")
        if name == "incident_resolved":
            incident = get_incident(h, str(getattr(args, "incident_id", "")))
            verdict = incident_resolved(h, incident, str(incident["env"]))
        elif name == "deployed_commit_matches":
            verdict = deployed_commit_matches(h, env, str(getattr(args, "commit", "")))
        else:
            verdict = service_healthy(h, env)
        return _report(ctx, [_running(h, env), _check("expected_state", verdict)],
                       {"verifier": name, "status": verdict[0]})
    return verifier(verifier_id)(verify)


incident_resolved_alone = _single("incident_resolved", "infra.incident-resolved")
deployed_commit_matches_alone = _single("deployed_commit_matches",
                                        "infra.deployed-commit-matches")
service_healthy_alone = _single("service_healthy", "infra.service-healthy")


