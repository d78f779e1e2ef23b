"""infra.uptimeharbor's records in the run graph, through the SDK's projection hook.

Pure functions of one journal event, in the pack vocabulary (``ontology/uptimeharbor.ttl``),
checked by the pack's shapes at commit (a production ``infra:Deployment`` must rely on a
verified staging ``infra:IncidentVerification`` of its commit — the commit check pulls the
staging deploy's records in through that link):

- ``action.intent`` of ``infra.deploy`` → an ``infra:Deployment`` (environment, commit,
  incident, fix, the staging verification a production deploy cites);
- ``action.observed`` of ``infra.deploy`` / ``infra.rollback`` → what the deployment
  touched (the environment, the previous commit), a rollback as ``infra:Rollback``;
  ``infra.detect_outage`` → one ``infra:ProbeResult`` per probed path; ``infra.run_tests``
  → an ``infra:TestRun``; ``infra.claim_fix`` → an ``infra:Fix``;
- ``verification.recorded`` of a deploy → the pack's recorded verifications as
  ``infra:IncidentVerification`` (status, commit, environment), linked to the core one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote

from cradle_kg.packs.sdk import AuditEvent, Triple, core_node, iri, literal, projection

INFRA = "https://w3id.org/cradle/pack/infra#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
PROV = "http://www.w3.org/ns/prov#"
BASE = "https://w3id.org/cradle/pack/infra/id/"
TIERS = ("staging", "production")
CRADLE = "https://w3id.org/cradle#"
_CORE_STATUS = {"verified": "Verified", "failed": "Failed"}


def ix(term: str) -> str:
    return iri(INFRA + term)


def node(kind: str, key: str) -> str:
    return iri(BASE + kind + "/" + quote(key, safe=""))


def _a(s: str, cls: str) -> Triple:
    return (s, iri(RDF_TYPE), ix(cls))


def environment(env: str) -> Iterator[Triple]:
    e = node("environment", env)
    yield _a(e, "Environment")
    if env in TIERS:
        yield (e, ix("tier"), ix(env))


def commit(sha: str) -> Iterator[Triple]:
    c = node("commit", sha)
    yield _a(c, "Commit")
    yield (c, ix("sha"), literal(sha))


def _args(ev: AuditEvent) -> dict[str, Any]:
    args = (ev.payload.get("action") or {}).get("arguments")
    return args if isinstance(args, dict) else {}


@projection("infra.deployments", kinds=("action.intent",))
def deployments(ev: AuditEvent) -> Iterable[Triple]:
    action = ev.payload["action"]
    if action.get("action_type") != "infra.deploy":
        return
    args = _args(ev)
    env, sha = str(args.get("env", "")), str(args.get("commit", ""))
    if not env or not sha:
        return
    d = node("deployment", str(action["id"]))
    yield _a(d, "Deployment")
    yield (d, iri(PROV + "wasGeneratedBy"), core_node("action", str(action["id"])))
    yield (d, ix("inEnvironment"), node("environment", env))
    yield from environment(env)
    yield (d, ix("runsCommit"), node("commit", sha))
    yield from commit(sha)
    if action.get("idempotency_key"):
        yield (d, ix("idempotencyKey"), literal(str(action["idempotency_key"])))
    if args.get("incident_id"):
        yield (d, ix("forIncident"), node("incident", str(args["incident_id"])))
    if args.get("fix_id"):
        yield (d, ix("deploysFix"), node("fix", str(args["fix_id"])))
    if args.get("staging_verification"):
        yield (d, ix("stagingVerification"),
               node("verification", str(args["staging_verification"])))


def _observed_deploy(action_id: str, tool: str, out: dict[str, Any]) -> Iterator[Triple]:
    env, sha = str(out.get("env", "")), str(out.get("commit", ""))
    if not env or not sha:
        return
    if tool == "infra.rollback":
        d = node("rollback", action_id)
        yield _a(d, "Rollback")
        yield (d, iri(PROV + "wasGeneratedBy"), core_node("action", action_id))
        yield (d, ix("inEnvironment"), node("environment", env))
        yield (d, ix("runsCommit"), node("commit", sha))
        yield from commit(sha)
    else:
        d = node("deployment", action_id)
    yield from environment(env)
    # what the change touched, as the tool reported it (gate 2 checks it against what its
    # verifier observed: `no_forbidden_side_effect`)
    yield (d, ix("touched"), node("environment", env))
    if out.get("previous_commit"):
        yield (d, ix("replacedCommit"), node("commit", str(out["previous_commit"])))
        yield from commit(str(out["previous_commit"]))


@projection("infra.observations", kinds=("action.observed",))
def observations(ev: AuditEvent) -> Iterable[Triple]:
    obs = ev.payload["observation"]
    out, tool = obs.get("output"), str(obs["tool_id"])
    if not isinstance(out, dict) or obs.get("error") or not tool.startswith("infra."):
        return
    action_id = str(obs["execution_id"])
    a = core_node("action", action_id)
    if tool in ("infra.deploy", "infra.rollback"):
        yield from _observed_deploy(action_id, tool, out)
    elif tool == "infra.detect_outage":
        for check in out.get("checks") or ():
            p = node("probe-result", f"{action_id}{check.get('path', '')}")
            yield _a(p, "ProbeResult")
            yield (p, iri(PROV + "wasGeneratedBy"), a)
            yield (p, ix("probesPath"), literal(str(check.get("path", ""))))
            if isinstance(check.get("status_code"), int):
                yield (p, ix("statusCode"), literal(int(check["status_code"])))
            yield (p, ix("inEnvironment"), node("environment", str(out.get("env", ""))))
        yield from environment(str(out.get("env", "")))
    elif tool == "infra.run_tests":
        t = node("test-run", action_id)
        yield _a(t, "TestRun")
        yield (t, iri(PROV + "wasGeneratedBy"), a)
        yield (t, ix("testedCommit"), node("commit", str(out.get("commit", ""))))
        yield (t, ix("testOutcome"), literal(str(out.get("outcome", ""))))
        yield from commit(str(out.get("commit", "")))
    elif tool == "infra.claim_fix" and out.get("acquired"):
        f = node("fix", str(out["fix_id"]))
        yield _a(f, "Fix")
        yield (f, iri(PROV + "wasGeneratedBy"), a)
        yield (f, ix("fixFor"), node("incident", str(out["incident_id"])))


@projection("infra.verifications", kinds=("verification.recorded",))
def verifications(ev: AuditEvent) -> Iterable[Triple]:
    """The pack's own recorded verifications of a deploy (its verifier's evidence)."""
    evidence = ev.payload.get("evidence")
    if not isinstance(evidence, dict) or not isinstance(evidence.get("recorded"), dict):
        return
    env, sha = str(evidence.get("env", "")), str(evidence.get("commit", ""))
    statuses = evidence.get("statuses") or {}
    core = core_node("verification", str(ev.payload["verification"]["id"]))
    for name, ident in sorted(evidence["recorded"].items()):
        v = node("verification", str(ident))
        yield _a(v, "IncidentVerification" if name == "incident_resolved" else "Check")
        yield (v, ix("checkName"), literal(str(name)))
        status = str(statuses.get(name, "inconclusive"))
        yield (v, ix("verificationStatus"), literal(status))
        # a pack verification is a cradle:Verification (ontology): it carries a core status
        yield (v, iri(CRADLE + "verificationStatus"), iri(CRADLE + _CORE_STATUS.get(
            status, "Inconclusive")))
        # both are verifications (PROV activities): the pack's check informed by the core's
        yield (v, iri(PROV + "wasInformedBy"), core)
        if env:
            yield (v, ix("verifiedIn"), node("environment", env))
        if sha:
            yield (v, ix("verifiedCommit"), node("commit", sha))
    if env:
        yield from environment(env)
    if sha:
        yield from commit(sha)
