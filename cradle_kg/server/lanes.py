"""One lane per proposal of a run, read from its journal events (what the page draws).

A lane is the proposal's path through the loop, seven stages in order — proposal,
decision, approval, action, observation, verification, transition — each with a state
(``ok``, ``wait``, ``fail`` or ``none`` when the proposal never got there), a short label
and the runtime's reasons (shown on hover). A proposal submitted again (after an approval)
stays one lane: a later event of a stage replaces the earlier one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..records import AuditEvent

STAGES = ("proposal", "decision", "approval", "action", "observation", "verification",
          "transition")
_OK_VERDICTS = {"allow"}
_WAIT_VERDICTS = {"require_approval"}


def _stage(lane: dict[str, Any], stage: str, state: str, label: str,
           reasons: Iterable[Any] = (), seq: int | None = None) -> None:
    lane["stages"][STAGES.index(stage)] = {"stage": stage, "state": state, "label": label,
                                           "reasons": [str(r) for r in reasons], "seq": seq}


def _new(pid: str) -> dict[str, Any]:
    return {"proposal_id": pid, "tool": None, "target": None, "outcome": None, "reasons": [],
            "stages": [{"stage": s, "state": "none", "label": "", "reasons": [], "seq": None}
                       for s in STAGES]}


def lanes(events: Iterable[AuditEvent]) -> list[dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    by_action: dict[str, str] = {}
    by_approval: dict[str, str] = {}

    def lane(pid: str | None) -> dict[str, Any] | None:
        if pid is None:
            return None
        return out.setdefault(pid, _new(pid))

    for e in events:
        p = e.payload
        if e.kind == "proposal.received":
            prop = p["proposal"]
            ln = lane(str(prop["id"]))
            assert ln is not None
            ln["tool"], ln["target"] = prop["action"]["action_type"], prop["action"]["target"]
            _stage(ln, "proposal", "ok", f"by {prop['agent_id']}", seq=e.seq)
        elif e.kind == "decision.made":
            by_action[str(p["action_id"])] = str(p["proposal_id"])
            d = p["decision"]
            verdict = str(d["verdict"])
            state = "ok" if verdict in _OK_VERDICTS else (
                "wait" if verdict in _WAIT_VERDICTS else "fail")
            why = [*d.get("reasons", []), *(f"policy `{r['policy_id']}` {r['effect']}"
                                            for r in d.get("policy_results", [])
                                            if r.get("determining"))]
            if (ln := lane(str(p["proposal_id"]))) is not None:
                _stage(ln, "decision", state, verdict, why, e.seq)
        elif e.kind == "approval.requested":
            a = p["approval"]
            by_approval[str(a["id"])] = str(a["proposal_id"])
            if (ln := lane(str(a["proposal_id"]))) is not None:
                _stage(ln, "approval", "wait", "requested", [f"approval `{a['id']}`"], e.seq)
        elif e.kind == "approval.decided":
            ln = lane(by_approval.get(str(p["approval_id"])))
            if ln is not None:
                status = str(p["status"])
                _stage(ln, "approval", "ok" if status == "approved" else "fail",
                       f"{status} by {p['approver_id']}", [p.get("reason") or ""][:1]
                       if p.get("reason") else [], e.seq)
        elif e.kind == "action.intent":
            ln = lane(by_action.get(e.subject))
            if ln is not None:
                _stage(ln, "action", "ok", str(p.get("tool", "")), seq=e.seq)
        elif e.kind == "action.observed":
            ln = lane(by_action.get(e.subject))
            obs = p.get("observation", {})
            if ln is not None:
                _stage(ln, "observation", "fail" if obs.get("error") else "ok",
                       "error" if obs.get("error") else "observed",
                       [obs["error"]] if obs.get("error") else [], e.seq)
        elif e.kind == "verification.recorded":
            ln = lane(by_action.get(str(p.get("action_id"))))
            v = p.get("verification", {})
            if ln is not None:
                failed = [f"{c['name']}: {c.get('detail', '')}" for c in v.get("checks", [])
                          if c.get("status") != "verified"]
                status = str(v.get("status", "verified" if not failed else "failed"))
                _stage(ln, "verification", "ok" if status == "verified" else "fail", status,
                       failed, e.seq)
        elif e.kind in ("transition.committed", "transition.aborted"):
            ln = lane(by_action.get(str(p.get("action_id"))))
            if ln is not None:
                ok = e.kind == "transition.committed"
                _stage(ln, "transition", "ok" if ok else "fail",
                       "committed" if ok else "aborted", seq=e.seq)
        elif e.kind == "run.outcome" and not p.get("submission"):
            o = p["outcome"]
            if (ln := lane(str(o["proposal_id"]))) is not None:
                ln["outcome"], ln["reasons"] = o["status"], [str(r) for r in o.get("reasons", [])]
    return list(out.values())
