"""Projection: journal events in, N-Quads out — a pure function.

No clock, no uuid, no I/O: the same journal gives the same quads, byte for byte. Each
event carries in its payload everything its triples need, so an event can be projected
alone (incrementally, as it is appended) or in a full rebuild, with the same result.

One named graph per run: ``<https://w3id.org/cradle/run/{run_id}>``. Object IRIs are
deterministic: ``<https://w3id.org/cradle/id/{kind}/{id}>`` with the id percent-encoded.

Shared objects — policies and policy-set versions, identities, tools, packs — are described
once, in the shared graph ``<https://w3id.org/cradle/graph/shared>``, not copied into every
run that meets them: a run graph links to them (``prov:wasDerivedFrom`` a policy,
``cradle:invokes`` a tool), and a query reading a policy's triples meets them once, however
many runs there are. :func:`event_quads` says which triples go where; :func:`event_triples`
gives both (the commit-time integrity check sees the policy nodes a decision cites).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..canonical import iso, parse_iso
from ..lineage.index import HOST_FACT_PREFIX
from ..storage.graph import SHARED_GRAPH
from .iris import ID_BASE as ID_BASE
from .iris import RUN_BASE as RUN_BASE
from .iris import node as node
from .iris import quoted as quoted
from .iris import run_graph as run_graph
from .lineage import LINEAGE_PROJECTORS
from .ntriples import INTEGER_RANGE, decimal, escape
from .packproj import PackProjector, pack_triples
from .vocab import CRADLE_NS, PROV_NS, RDF_NS, RDFS_NS, XSD_NS

if TYPE_CHECKING:  # the records' models are not needed to project (a query worker's start-up)
    from ..records import AuditEvent

_SHARED = f"<{SHARED_GRAPH}>"

_TYPE = f"<{RDF_NS}type>"
_LABEL = f"<{RDFS_NS}label>"
_DATETIME = f"{XSD_NS}dateTime"
_INTEGER = f"{XSD_NS}integer"
_DECIMAL = f"{XSD_NS}decimal"
_BOOLEAN = f"{XSD_NS}boolean"

VERDICTS = {"allow": "Allow", "deny": "Deny", "repair": "Repair", "clarify": "Clarify",
            "require_approval": "RequireApproval"}
RISKS = {"low": "LowRisk", "medium": "MediumRisk", "high": "HighRisk"}
SIDE_EFFECTS = {"read_only": "ReadOnly", "reversible": "Reversible",
                "compensable": "Compensable", "external_write": "ExternalWrite",
                "irreversible": "Irreversible"}
APPROVALS = {"pending": "Pending", "approved": "Approved", "rejected": "Rejected",
             "changes_requested": "ChangesRequested", "expired": "Expired",
             "revoked": "Revoked"}
VERIFICATIONS = {"verified": "Verified", "failed": "Failed", "inconclusive": "Inconclusive",
                 "unverified": "Unverified"}


def c(term: str) -> str:
    return f"<{CRADLE_NS}{term}>"


def p(term: str) -> str:
    return f"<{PROV_NS}{term}>"


def identity(ident: str) -> str:
    return node("agent", ident)


def lit(value: Any) -> str:
    """An N-Triples literal; strings are simple literals (xsd:string in RDF 1.1), written
    the way Oxigraph writes them back, so store dumps and projections compare byte for byte."""
    if type(value) is str:  # the common case first (a str subclass takes the last line)
        return f'"{escape(value)}"'
    if isinstance(value, bool):
        return f'"{"true" if value else "false"}"^^<{_BOOLEAN}>'
    if isinstance(value, int):
        # past 64 bits (only a configuration of more than 18 digits, before they were
        # capped, could let one in): kept as its digits — Virtuoso refused the batch (2^64)
        # or stored another number (2^63 as -2^63), Oxigraph no number
        return (f'"{value}"^^<{_INTEGER}>' if value in INTEGER_RANGE else f'"{value}"')
    if isinstance(value, float):
        return _float_lit(value)
    return f'"{escape(str(value))}"'


def _float_lit(value: float) -> str:
    """A float as :func:`.ntriples.decimal` writes it. One it has no form for cannot come
    in any more (the input limits refuse it) but may sit in an older journal: one ``repr``
    wrote without an exponent is written as before (every store reads it); one it wrote
    with an exponent (never an ``xsd:decimal``: ``1e+40`` stopped a Virtuoso graph) or a
    NaN or infinity is kept as its text, a plain string."""
    text = decimal(value)
    if text is not None:
        return f'"{text}"^^<{_DECIMAL}>'
    shown = float.__repr__(value)
    if "e" not in shown and math.isfinite(value):
        return f'"{shown}"^^<{_DECIMAL}>'
    return f'"{shown}"'


#: the value of a flag kept by the projection (``cradle:awaitsUse``, ``awaitsVerification``)
_TRUE = lit(True)
#: the predicates of the loops over a record's lists of literals (its checks, reasons, pack
#: versions, argument names): where the shapes read none of them (the core's do not), the
#: commit check's projection (:class:`_KeptQuads`) skips the loop whole instead of writing
#: and dropping each literal — the same triples (``tests/graph/test_shape_reach.py``)
_CHECK_RESULT = c("checkResult")
_PACK_VERSION = c("packVersion")
_REASON = c("reason")
_SLOT = c("slot")
_POSTCONDITIONS = c("postconditions")


def _canonical_dt(moment: datetime) -> str:
    """The canonical xsd:dateTime literal of an aware ``moment``: UTC, ``Z``, no trailing
    zero digits — the form Oxigraph stores, so dumps and projections compare byte for byte."""
    moment = moment.astimezone(UTC)
    # isoformat pads the year to four digits, strftime's %Y (glibc) does not below 1000
    out = (moment.isoformat()[:19] if moment.year >= 1000
           else moment.strftime("%Y-%m-%dT%H:%M:%S"))
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    if fraction:
        out += "." + fraction
    return f'"{out}Z"^^<{_DATETIME}>'


@lru_cache(maxsize=4096)
def dt(text: str) -> str:
    """The canonical xsd:dateTime literal of an ISO-8601 ``text`` (:func:`_canonical_dt`).

    The runtime writes its times as :func:`~cradle_kg.canonical.iso` does
    (``YYYY-MM-DDTHH:MM:SS.ffffffZ``, UTC): that form is canonical already but for the
    fraction's trailing zeros, so it is only checked to be a real time, not reformatted."""
    if (len(text) == 27 and text[26] == "Z" and text[19] == "." and text[4] == "-"
            and text[7] == "-" and text[10] == "T" and text[13] == ":" and text[16] == ":"
            and "1000" <= text[:4] <= "9999"):
        try:
            datetime.fromisoformat(text[:26])  # a real time, as parse_iso insists
        except ValueError:
            pass  # the general path says what is wrong
        else:
            return f'"{text[:26].rstrip("0").rstrip(".")}Z"^^<{_DATETIME}>'
    moment = parse_iso(text)
    try:
        return _canonical_dt(moment)
    except OverflowError:
        # a time whose UTC form no date holds (`9999-12-31T23:59:59-05:00`): no store has
        # an xsd:dateTime for it; kept as its text, as a number no store holds is. Only an
        # approval's expiry written before it was checked can be one (tests/security/test_65)
        return lit(text)


def at(moment: datetime) -> str:
    """``dt(iso(moment))`` without the round trip through text (an event's own ``at``:
    one per event, never twice the same, so :func:`dt`'s cache would only miss)."""
    if moment.tzinfo is None:
        raise ValueError("naive datetimes are not allowed: attach a timezone")
    if moment.year < 1001:  # near year 1 an offset can leave the years strftime pads
        return dt(iso(moment))
    return _canonical_dt(moment)


class _Quads:
    """Collects the triples of one event as ``"s p o"`` strings (N-Triples terms): its
    run's (``lines``) and those about shared objects (``shared``, the shared graph). With
    ``end`` / ``shared_end`` (``" <graph> .\\n"``) each line is written as a whole N-Quads
    line at once (:func:`project_event`: no second pass over the lines to add the graph)."""

    __slots__ = ("end", "lines", "shared", "shared_end")

    def __init__(self, end: str = "", shared_end: str = "") -> None:
        self.lines: list[str] = []
        self.shared: list[str] = []
        self.end = end
        self.shared_end = shared_end

    def add(self, s: str, pred: str, o: str) -> None:
        self.lines.append(f"{s} {pred} {o}{self.end}")

    def typed(self, s: str, *classes: str) -> None:
        for cls in classes:
            self.lines.append(f"{s} {_TYPE} <{CRADLE_NS}{cls}>{self.end}")

    def share(self, s: str, pred: str, o: str) -> None:
        self.shared.append(f"{s} {pred} {o}{self.shared_end}")

    def wants(self, pred: str) -> bool:
        """Whether a triple with ``pred`` is written (all are, here): a loop of literals
        whose predicate is not wanted is skipped whole (see :class:`_KeptQuads`)."""
        return True


class _KeptQuads(_Quads):
    """:class:`_Quads` that writes only the triples whose predicate is in ``keep`` (the
    commit check's: :func:`event_triples`' ``keep``): the same lines, in the same order,
    as writing them all and dropping the others afterwards, without writing the others."""

    __slots__ = ("classes", "keep", "keep_type")

    def __init__(self, keep: frozenset[str], classes: frozenset[str] | None = None) -> None:
        super().__init__()
        self.keep = keep
        self.keep_type = _TYPE in keep
        #: the classes whose ``rdf:type`` triples are kept (None: all)
        self.classes = classes

    def add(self, s: str, pred: str, o: str) -> None:
        if pred in self.keep and (pred != _TYPE or self.classes is None or o in self.classes):
            self.lines.append(f"{s} {pred} {o}")

    def typed(self, s: str, *classes: str) -> None:
        if self.keep_type:
            for cls in classes:
                o = f"<{CRADLE_NS}{cls}>"
                if self.classes is None or o in self.classes:
                    self.lines.append(f"{s} {_TYPE} {o}")

    def share(self, s: str, pred: str, o: str) -> None:
        if pred in self.keep and (pred != _TYPE or self.classes is None or o in self.classes):
            self.shared.append(f"{s} {pred} {o}")

    def wants(self, pred: str) -> bool:
        return pred in self.keep


def action_node(action_id: str) -> str:
    return node("action", action_id)


def key_part(ident: str) -> str:
    """``ident`` as one part of a composite node key: its ``%`` and ``/`` escaped
    (``%25``, ``%2F``), so that the ``/`` between the parts is the only ``/`` left."""
    if "/" not in ident and "%" not in ident:
        return ident
    return ident.replace("%", "%25").replace("/", "%2F")


def proposal_key(run_id: str, proposal_id: str, submission: str | None = None,
                 attempt: int = 0) -> str:
    """A proposal's node key: its id in its run, its attempt when it is not the first —
    and, for a submission refused because the id was already used for other content, that
    submission's hash, so the graph never merges two different submissions into one node
    (a deny of one would otherwise read as a deny of the other: integrity rule 6).

    INVARIANT: each part is escaped (:func:`key_part`) before the parts are joined: run and
    proposal ids are the agent's and may hold ``/``; joined as they were, proposal
    ``refunds/p-1`` of run ``team`` was the node of proposal ``p-1`` of run
    ``team/refunds`` — another agent's, whose evidence, task and facts the named queries
    then mixed with its own (``tests/security/test_386``)."""
    key = f"{key_part(run_id)}/{key_part(proposal_id)}"
    if attempt:
        key += f"/attempt-{attempt}"
    return f"{key}/{key_part(submission)}" if submission else key


def recorded_fact_key(run_id: str, proposal_id: str, attempt: int, index: int) -> str:
    """The key a verification records for the fact ``index`` of a proposal it settles:
    its parts joined as they are, as it has always been journaled (the journal keeps its
    bytes); :func:`settled_fact_key` reads it back as the fact's node key."""
    return f"{run_id}/{proposal_id}" + (f"/attempt-{attempt}" if attempt else "") + f"/{index}"


def settled_fact_key(run_id: str, proposal_id: str | None, recorded: str) -> str:
    """The node key of a fact a verification settles, from the key it recorded
    (``<run>/<proposal>[/attempt-N]/<index>``, the parts joined as they are — how
    :mod:`cradle_kg.loop.commit` has always written it): that of the proposal's own fact
    (:func:`proposal_key`'s parts). A key not of that form (no proposal id) stays as it is."""
    raw = f"{run_id}/{proposal_id}/"
    if proposal_id is None or not recorded.startswith(raw):
        return recorded
    return f"{proposal_key(run_id, proposal_id)}/{recorded[len(raw):]}"


def proposal_node(run_id: str, proposal_id: str, submission: str | None = None,
                  attempt: int = 0) -> str:
    return node("proposal", proposal_key(run_id, proposal_id, submission, attempt))


def _proposal_ref(ev: AuditEvent, proposal_id: str) -> str:
    """The proposal node an event about a proposal points at."""
    return proposal_node(ev.run_id, proposal_id, ev.payload.get("submission"),
                         int(ev.payload.get("attempt", 0)))


#: the header's terms, built once (every event has a header)
_H_AUDIT = f"<{ID_BASE}audit/"
_H_EVENT = f"<{ID_BASE}event/"
_H_AUDIT_TYPE = f" {_TYPE} {c('AuditEvent')}"
_H_EVENT_TYPE = f" {_TYPE} {c('RuntimeEvent')}"
_H_SEQ, _H_KIND, _H_AT = f" {c('seq')} ", f" {c('eventKind')} ", f" {c('at')} "
_H_HASH, _H_PREV, _H_ACTOR = f" {c('eventHash')} ", f" {c('prevHash')} ", f" {c('actor')} "
_H_RECORDS, _H_IN_RUN = f" {c('records')} ", f" {c('inRun')} "
_H_SUBJECT = f" {c('subjectRef')} "


def _event_header(q: _Quads, ev: AuditEvent, subject: str | None) -> None:
    # the same lines as q.typed / q.add would give, in the same order, in one extend
    seq = f"{ev.seq:d}"  # digits (and a sign): their own percent-encoding
    audit = f"{_H_AUDIT}{seq}>"
    runtime_event = f"{_H_EVENT}{seq}>"
    kind = lit(ev.kind)
    end = q.end
    q.lines += (
        f"{audit}{_H_AUDIT_TYPE}{end}",
        f'{audit}{_H_SEQ}"{seq}"^^<{_INTEGER}>{end}',
        f"{audit}{_H_KIND}{kind}{end}",
        f"{audit}{_H_AT}{at(ev.at)}{end}",
        f"{audit}{_H_HASH}{lit(ev.hash)}{end}",
        f"{audit}{_H_PREV}{lit(ev.prev_hash)}{end}",
        f"{audit}{_H_ACTOR}{identity(ev.actor)}{end}",
        f"{audit}{_H_RECORDS}{runtime_event}{end}",
        f"{runtime_event}{_H_EVENT_TYPE}{end}",
        f"{runtime_event}{_H_KIND}{kind}{end}",
        f"{runtime_event}{_H_IN_RUN}{run_graph(ev.run_id)}{end}",
    )
    if subject:
        q.lines.append(f"{runtime_event}{_H_SUBJECT}{subject}{end}")


def _provenance(q: _Quads, s: str, prov: dict[str, Any] | None) -> None:
    if not prov:
        return
    for key, term in (("input_hash", "inputHash"), ("output_hash", "outputHash")):
        if prov.get(key):
            q.add(s, c(term), lit(prov[key]))
    if prov.get("tool_ref"):
        q.add(s, c("toolVersion"), lit(prov["tool_ref"]))
    if prov.get("source"):
        q.add(s, p("wasAttributedTo"), identity(str(prov["source"])))


def _proposal(q: _Quads, ev: AuditEvent) -> str:
    prop = ev.payload["proposal"]
    submission = ev.payload.get("submission")
    key = proposal_key(ev.run_id, prop["id"], submission, int(prop.get("attempt", 0)))
    s = node("proposal", key)
    agent = identity(prop["agent_id"])
    q.typed(s, "Proposal")
    q.add(s, c("runId"), lit(ev.run_id))
    q.add(s, c("inRun"), run_graph(ev.run_id))
    q.add(s, c("at"), at(ev.at))
    q.share(agent, _TYPE, c("Agent"))
    q.add(agent, c("proposes"), s)
    q.add(s, p("wasAttributedTo"), agent)
    task = node("task", prop["task_id"])
    q.typed(task, "Task")
    q.add(s, p("wasDerivedFrom"), task)
    if prop.get("confidence") is not None:
        q.add(s, c("confidence"), lit(float(prop["confidence"])))
    for i, fact in enumerate(prop.get("facts", [])):
        f = node("fact", f"{key}/{i}")
        q.typed(f, "Fact")
        q.add(f, c("verificationStatus"), c("Unverified"))
        q.add(f, c("factSubject"), lit(fact["subject"]))
        q.add(f, c("factPredicate"), lit(fact["predicate"]))
        q.add(f, c("factValue"), lit(fact["object"] if isinstance(
            fact["object"], str | int | float | bool) else repr(fact["object"])))
        q.add(f, c("source"), lit(fact["source"]))
        if host_stated(str(fact["source"]), prop.get("on_behalf_of")):
            q.add(f, _HOST_STATED, _TRUE)
        q.add(s, c("candidateFact"), f)
    for ref in prop.get("evidence_refs", []):
        q.add(s, c("isSupportedBy"), node("evidence", ref))
    _intent_of(q, s, key, prop)
    return s


_HOST_STATED = c("hostStated")


def host_stated(source: str, on_behalf_of: str | None) -> bool:
    """Whether a fact of this ``source`` is the host's word: a ``host:`` source, or the
    principal's own the proposal acts for — what only the host may write (an agent's token
    is refused both: ``tests/security/test_59``, ``test_151``). Any other source is what
    the proposing agent claims; the graph says so (``cradle:hostStated``), so that a query
    asking who said it does not take the agent's claim for the person's
    (``tests/security/test_388``)."""
    return source.startswith(HOST_FACT_PREFIX) or (bool(on_behalf_of)
                                                    and source == on_behalf_of)


def _decision(q: _Quads, ev: AuditEvent) -> str:
    d = ev.payload["decision"]
    s = node("decision", d["id"])
    q.typed(s, "Decision")
    q.add(s, c("verdict"), c(VERDICTS[d["verdict"]]))
    q.add(s, c("evaluates"), _proposal_ref(ev, d["proposal_id"]))
    q.add(s, c("decidedAt"), dt(d["decided_at"]))
    q.add(s, c("policyVersion"), lit(d["policy_version"]))
    q.add(s, p("wasAttributedTo"), identity(d["decided_by"]))
    if q.wants(_PACK_VERSION):
        for pack in d.get("pack_versions", []):
            q.add(s, _PACK_VERSION, lit(pack))
    if d.get("granted_to"):
        q.add(s, c("grantedTo"), identity(d["granted_to"]))
    if q.wants(_REASON):
        for reason in d.get("reasons", []):
            q.add(s, _REASON, lit(reason))
    if q.wants(_CHECK_RESULT):
        for check in d.get("checks", []):
            q.add(s, _CHECK_RESULT, lit(f"{check['check']}={check['status']}"))
    action_id = proposed_action_id(ev.payload.get("action_id"), d)
    for pol in d.get("policy_results", []):
        pol_node = node("policy", f"{d['policy_version']}/{pol['policy_id']}")
        q.share(pol_node, _TYPE, c("Policy"))
        q.share(pol_node, c("policyId"), lit(pol["policy_id"]))
        q.share(pol_node, c("policyVersion"), lit(d["policy_version"]))
        q.add(s, c("policyId"), lit(pol["policy_id"]))
        q.add(s, p("wasDerivedFrom"), pol_node)
        if action_id:
            q.add(action_node(action_id), c("isGovernedBy"), pol_node)
    for ref in ev.payload.get("evidence_not_counted") or ():  # cited, never counted
        q.add(s, c("evidenceNotCounted"), node("evidence", str(ref)))
    if action_id:
        _proposed_action(q, ev, action_id, d["proposal_id"])
        q.add(s, c("decisionFor"), action_node(action_id))
    _context_of(q, ev, s, d)
    return s


#: the verdicts under which nothing runs (``cradle_kg.loop.gate1.decision.REFUSED_VERDICTS``)
_REFUSED = frozenset({"deny", "clarify", "repair"})


def proposed_action_id(action_id: str | None, decision: dict[str, Any]) -> str | None:
    """The id of the action node a decision's proposal contains: the action its key names
    (``act:<key>``) — or, when the decision refused it, one of its own
    (``act:<key>/<decision>``: an action id holds no ``/``).

    INVARIANT: a refused proposal never contains the node of an action that ran. The key
    names the *effect*: a credit denied during a freeze and proposed again after it (the
    same task, step and arguments) derives the same key, as does an agent's pinned key
    reused for another input; sharing the node, the denied proposal contained the
    executed action — rule 6 reported on an honest store, and ``task-effects`` of the
    denied proposal's task listed the credit (``tests/security/test_468``)."""
    if action_id and decision.get("verdict") in _REFUSED:
        return f"{action_id}/{decision['id']}"
    return action_id


def _proposed_action(q: _Quads, ev: AuditEvent, action_id: str, proposal_id: str) -> None:
    """The action a proposal contains, whether or not it ever runs."""
    a = action_node(action_id)
    req = ev.payload.get("action") or {}
    q.typed(a, "Action")
    q.add(_proposal_ref(ev, proposal_id), c("contains"), a)
    if req.get("action_type"):
        tool = node("tool", req["action_type"])
        q.share(tool, _TYPE, c("Tool"))
        q.add(a, c("invokes"), tool)
    if req.get("target"):
        res = node("resource", req["target"])
        q.typed(res, "Resource")
        q.add(a, c("targets"), res)
    if req.get("environment"):
        q.add(a, c("environment"), lit(req["environment"]))


def _approval_requested(q: _Quads, ev: AuditEvent) -> str:
    a = ev.payload["approval"]
    s = node("approval", a["id"])
    q.typed(s, "HumanApproval")
    q.add(s, c("approvalStatus"), c("Pending"))
    q.add(s, c("actionDigest"), lit(a["action_digest"]))
    q.add(node("decision", a["decision_id"]), c("awaitsApproval"), s)
    if a.get("scope"):
        q.add(s, c("scope"), lit(a["scope"]))
    q.add(s, c("at"), dt(a["requested_at"]))
    return s


def _approval_decided(q: _Quads, ev: AuditEvent) -> str:
    pl = ev.payload
    s = node("approval", pl["approval_id"])
    q.typed(s, "HumanApproval")
    if pl["status"] == "revoked":  # taken back: its approver and expiry stay as given
        # INVARIANT: a reusable approval revoked after its use keeps `Approved` — the
        # actions that ran under it before stay authorized (rule 2); its revoke's place in
        # the journal (`revokedSeq`) is what rule 2 orders their intents (`intentSeq`)
        # against: the journal's order, not the clocks (tests/security/test_318)
        if pl.get("used") is not True:
            q.add(s, c("approvalStatus"), c("Revoked"))
        q.add(s, c("revokedBy"), identity(pl["approver_id"]))
        q.add(s, c("revokedAt"), at(ev.at))
        q.add(s, c("revokedSeq"), lit(ev.seq))
        if pl.get("reason"):  # on its event, as a cancel's (the approval's is the approver's)
            q.add(node("event", str(ev.seq)), _REASON, lit(pl["reason"]))
        return s
    q.add(s, c("approvalStatus"), c(APPROVALS[pl["status"]]))
    q.add(s, c("approver"), identity(pl["approver_id"]))
    q.add(s, c("decidedAt"), at(ev.at))
    if pl.get("expires_at"):
        q.add(s, c("expiresAt"), dt(pl["expires_at"]))
    if pl.get("scope"):
        q.add(s, c("scope"), lit(pl["scope"]))
    if pl.get("reason"):
        q.add(s, c("reason"), lit(pl["reason"]))
    if pl["status"] == "approved":
        q.add(s, c("awaitsUse"), _TRUE)  # until an execution it authorizes is intended
    return s


def _intent(q: _Quads, ev: AuditEvent) -> str:
    pl = ev.payload
    act = pl["action"]
    s = action_node(act["id"])
    q.typed(s, "Action")
    q.add(s, c("authorizedBy"), node("decision", pl["decision_id"]))
    q.add(s, c("idempotencyKey"), lit(act["idempotency_key"]))
    q.add(s, c("riskLevel"), c(RISKS[act["risk_level"]]))
    q.add(s, c("sideEffectClass"), c(SIDE_EFFECTS[act["side_effect_class"]]))
    q.add(s, c("inputHash"), lit(act["input_hash"]))
    if pl.get("tool"):
        q.add(s, c("toolVersion"), lit(pl["tool"]))
    if pl.get("approval_id"):
        q.add(node("approval", pl["approval_id"]), c("authorizes"),
              node("decision", pl["decision_id"]))
        q.add(s, c("intentSeq"), lit(ev.seq))  # ordered with a revoke of it (rule 2)
    return s


def _observed(q: _Quads, ev: AuditEvent) -> str:
    pl = ev.payload
    o = pl["observation"]
    s = node("observation", o["id"])
    a = action_node(o["execution_id"])
    q.typed(s, "Observation")
    q.add(s, c("outputHash"), lit(o["output_hash"]))
    q.add(s, c("at"), dt(o["observed_at"]))
    q.add(node("tool", o["tool_id"]), c("produces"), s)
    q.add(a, c("hasObservation"), s)
    if o.get("refusal"):  # the tool's typed refusal: it wrote nothing (test_557)
        q.add(s, c("refusalCode"), lit(o["refusal"]))
    if pl.get("executed_at") and pl.get("executed_by"):
        q.add(a, c("executedAt"), dt(pl["executed_at"]))
        q.add(a, c("executedBy"), identity(pl["executed_by"]))
        q.add(a, c("awaitsVerification"), _TRUE)  # until its verification is recorded
    return s


def _verification(q: _Quads, ev: AuditEvent) -> str:
    v = ev.payload["verification"]
    s = node("verification", v["id"])
    q.typed(s, "Verification")
    q.add(s, c("verificationStatus"), c(VERIFICATIONS[v["status"]]))
    q.add(s, c("at"), dt(v["verified_at"]))
    q.add(action_node(v["execution_id"]), c("hasVerification"), s)
    if q.wants(_CHECK_RESULT):
        for check in v.get("checks", []):
            q.add(s, _CHECK_RESULT, lit(f"{check['name']}={check['status']}"))
    for ref in v.get("evidence_refs", []):
        e = node("evidence", ref)
        q.typed(e, "Evidence")
        q.add(e, c("contentHash"), lit(ref))
        q.add(s, p("used"), e)
    if ev.payload.get("transition_id"):
        q.add(s, c("checks"), node("transition", ev.payload["transition_id"]))
    _settled_facts(q, ev, s, ev.payload.get("facts") or ())
    _world_read(q, s, v, ev.payload.get("verifier_report") or {})
    return s


def _world_read(q: _Quads, s: str, v: dict[str, Any], report: dict[str, Any]) -> None:
    """What gate 2 read of the world: the resources its verifier observed changed, and
    how the postconditions went (held, failed, or `not_declared`)."""
    for resource in report.get("changed") or ():
        res = node("resource", str(resource))
        q.typed(res, "Resource")
        q.add(res, _LABEL, lit(str(resource)))
        q.add(s, c("observedChange"), res)
    if not q.wants(_POSTCONDITIONS):
        return
    for check in v.get("checks", []):
        if check["name"] == "postconditions" and check.get("detail"):
            q.add(s, _POSTCONDITIONS, lit(str(check["detail"])))


# --- issue 14: facts with a life cycle; intent, context and constraints -----------------------

_FACT_STATUS = {"verified": "Verified", "contradicted": "Rejected"}


def _fact_node(ev: AuditEvent, recorded: str) -> str:
    return node("fact", settled_fact_key(ev.run_id, ev.payload.get("proposal_id"), recorded))


def _settled_facts(q: _Quads, ev: AuditEvent, verification: str,
                   facts: Iterable[dict[str, Any]]) -> None:
    """A verification that confirms a candidate fact makes it Verified, supported by the
    evidence the verifier read; one that contradicts it makes it Rejected."""
    for f in facts:
        fact = _fact_node(ev, f["fact"])
        q.add(fact, c("verificationStatus"), c(_FACT_STATUS[f["status"]]))
        q.add(verification, c("settlesFact"), fact)
        if f["status"] == "verified":
            for ref in f.get("evidence_refs", ()):
                q.add(fact, c("isSupportedBy"), node("evidence", ref))


def _fact_retractions(ev: AuditEvent) -> list[str]:
    return [f"{_fact_node(ev, f['fact'])} {c('verificationStatus')} {c('Unverified')}"
            for f in ev.payload.get("facts") or ()]


def _intent_of(q: _Quads, s: str, key: str, prop: dict[str, Any]) -> None:
    """What the agent is trying to achieve: the task, the tool it asks for, its slots."""
    intent = node("intent", key)
    q.typed(intent, "Intent")
    q.add(s, c("hasIntent"), intent)
    q.add(intent, c("intentType"), lit(str(prop["action"]["action_type"])))
    q.add(intent, p("wasDerivedFrom"), node("task", prop["task_id"]))
    if q.wants(_SLOT):
        for slot in sorted(prop["action"].get("arguments") or {}):
            q.add(intent, _SLOT, lit(str(slot)))


def _context_of(q: _Quads, ev: AuditEvent, decision: str, d: dict[str, Any]) -> None:
    """The timestamped inputs a decision evaluated, and the pack constraints it applied."""
    ctx = node("context", d["id"])
    q.typed(ctx, "Context")
    q.add(decision, c("evaluates"), ctx)
    q.add(ctx, c("at"), dt(d["decided_at"]))
    q.add(ctx, c("policyVersion"), lit(d["policy_version"]))
    env = (ev.payload.get("action") or {}).get("environment")
    if env:
        q.add(ctx, c("environment"), lit(env))
    if q.wants(_PACK_VERSION):
        for pack in d.get("pack_versions", []):
            q.add(ctx, _PACK_VERSION, lit(pack))
    if q.wants(_CHECK_RESULT):
        for check in d.get("checks", []):
            q.add(ctx, _CHECK_RESULT, lit(f"{check['check']}={check['status']}"))
    for pol in d.get("policy_results", []):  # each policy of the set was evaluated in it
        q.add(node("policy", f"{d['policy_version']}/{pol['policy_id']}"), c("evaluates"), ctx)
    for found in ev.payload.get("validator_findings", ()):
        constraint = node("constraint", str(found["validator"]))
        q.typed(constraint, "Constraint")
        q.add(constraint, _LABEL, lit(str(found["validator"])))
        q.add(ctx, c("appliesConstraint"), constraint)
        if found.get("findings"):
            q.add(decision, c("violatesConstraint"), constraint)


def _transition(q: _Quads, ev: AuditEvent) -> str:
    t = ev.payload["transition"]
    s = node("transition", t["id"])
    q.typed(s, "StateTransition")
    q.add(s, c("transitionOf"), action_node(ev.payload["action_id"]))
    if t.get("committed_at"):
        q.add(s, c("committedAt"), dt(t["committed_at"]))
    if t.get("aborted_at"):
        q.add(s, c("abortedAt"), dt(t["aborted_at"]))
    if t.get("reason"):
        q.add(s, c("reason"), lit(t["reason"]))
    if t.get("to_state"):
        state = node("state", t["to_state"])
        q.typed(state, "ResourceState")
        q.add(state, c("contentHash"), lit(t["to_state"]))
        q.add(s, c("changes"), state)
    return s


def _outcome(q: _Quads, ev: AuditEvent) -> str:
    # the status goes on this event's own node: a proposal may end twice (waiting, then done)
    o = ev.payload["outcome"]
    q.add(node("event", str(ev.seq)), c("outcomeStatus"), lit(o["status"]))
    return _proposal_ref(ev, o["proposal_id"])


def _evidence(q: _Quads, ev: AuditEvent) -> str:
    s = node("evidence", ev.payload["ref"])
    q.typed(s, "Evidence")
    q.add(s, c("contentHash"), lit(ev.payload["ref"]))
    q.add(s, c("at"), at(ev.at))
    q.add(s, p("wasAttributedTo"), identity(ev.actor))
    return s


def _policyset(q: _Quads, ev: AuditEvent) -> str:
    version = ev.payload["version"]
    for pid in ev.payload.get("policy_ids", []):
        pol = node("policy", f"{version}/{pid}")
        q.share(pol, _TYPE, c("Policy"))
        q.share(pol, c("policyId"), lit(pid))
        q.share(pol, c("policyVersion"), lit(version))
        # one `at` per activation: a version switched back to is in force again
        q.share(pol, c("at"), at(ev.at))
    for pack in ev.payload.get("packs", []):
        q.share(node("policyset", version), c("packVersion"), lit(pack))
    return node("policyset", version)


_STAGES = {"autonomy.policy": "observation", "autonomy.proposed": "proposal",
           "autonomy.shadow": "shadow", "autonomy.promoted": "promoted",
           "autonomy.halted": "halted"}


def _autonomy(q: _Quads, ev: AuditEvent) -> str:
    """Progressive autonomy of a human step: each stage change is a visible event."""
    pl = ev.payload
    step = node("step", f"{pl['workflow']}/{pl['step']}")
    here = node("event", str(ev.seq))
    q.typed(step, "WorkflowStep")
    q.add(step, _LABEL, lit(f"{pl['workflow']}/{pl['step']}"))
    q.add(here, c("autonomyStage"), lit(_STAGES[ev.kind]))
    q.add(here, c("at"), at(ev.at))
    q.add(here, p("wasAssociatedWith"), identity(ev.actor))
    if pl.get("rule_version"):
        q.add(here, c("ruleVersion"), lit(pl["rule_version"]))
    for key, term in (("reproduction_rate", "reproductionRate"), ("agreement", "agreement")):
        if pl.get(key) is not None:
            q.add(here, c(term), lit(float(pl[key])))
    if pl.get("reason"):
        q.add(here, c("reason"), lit(pl["reason"]))
    return step


def _human_step(q: _Quads, ev: AuditEvent) -> str:
    """A human step decided by a person, or by a promoted rule (with its version)."""
    pl = ev.payload
    step = node("step", f"{pl['workflow']}/{pl['step']}")
    here = node("event", str(ev.seq))
    q.typed(step, "WorkflowStep")
    q.add(here, c("autonomyStage"), lit("automated" if ev.kind == "human.automated"
                                        else "human"))
    q.add(here, p("wasAssociatedWith"), identity(ev.actor))
    if pl.get("rule_version"):
        q.add(here, c("ruleVersion"), lit(pl["rule_version"]))
    return step


def _workflow_end(q: _Quads, ev: AuditEvent) -> str | None:
    """A workflow run's end is its event's header alone (its kind, its actor); a person's
    cancel (``workflow cancel``: a ``workflow.failed`` its actor, a person, wrote) says why
    on its event — ``cradle:reason``, "cancelled by `who`: their reason" (the payload read
    as :func:`cradle_kg.runs.cancelled_by` reads it; not imported: a query worker imports
    the projection without the event records)."""
    p = ev.payload
    if (p.get("code") == "cancelled" and isinstance(p.get("cancelled_by"), str)
            and isinstance(p.get("reason"), str)):
        q.add(node("event", str(ev.seq)), _REASON, lit(str(ev.payload["reason"])))
    return None


_PROJECTORS = {
    "proposal.received": _proposal,
    "decision.made": _decision,
    "approval.requested": _approval_requested,
    "approval.decided": _approval_decided,
    "action.intent": _intent,
    "action.observed": _observed,
    **LINEAGE_PROJECTORS,
    "verification.recorded": _verification,
    "transition.committed": _transition,
    "transition.aborted": _transition,
    "run.outcome": _outcome,
    "evidence.collected": _evidence,
    "policyset.activated": _policyset,
    **dict.fromkeys(_STAGES, _autonomy),
    "human.decided": _human_step,
    "human.automated": _human_step,
    "workflow.failed": _workflow_end,
}


def event_retractions(ev: AuditEvent) -> list[str]:
    """Triples an event makes false: a decided approval is no longer pending, a used one
    no longer awaits its use, a verified action no longer awaits its verification.

    The two ``awaits…`` flags are what the listing queries ``stale-approvals`` and
    ``unverified-actions`` find through an index, so that they cost what they return
    rather than a pass over every approval or action of the store."""
    if ev.kind == "approval.decided":
        s = node("approval", ev.payload["approval_id"])
        if ev.payload.get("status") == "revoked":  # approved no more, awaiting no use
            if ev.payload.get("used") is True:  # what ran under it stays approved
                return [f"{s} {c('awaitsUse')} {_TRUE}"]
            return [f"{s} {c('approvalStatus')} {c('Approved')}",
                    f"{s} {c('awaitsUse')} {_TRUE}"]
        return [f"{s} {c('approvalStatus')} {c('Pending')}"]
    if ev.kind == "action.intent" and ev.payload.get("approval_id"):
        return [f"{node('approval', ev.payload['approval_id'])} {c('awaitsUse')} {_TRUE}"]
    if ev.kind == "verification.recorded":
        done = action_node(ev.payload["verification"]["execution_id"])
        return [f"{done} {c('awaitsVerification')} {_TRUE}", *_fact_retractions(ev)]
    return []


def _collect(ev: AuditEvent, q: _Quads, header: bool,
             projectors: Sequence[PackProjector], strict: bool) -> _Quads:
    projector = _PROJECTORS.get(ev.kind)
    subject = projector(q, ev) if projector else None
    if header:
        _event_header(q, ev, subject)
    if projectors:
        extra = pack_triples(ev, projectors, strict=strict)
        q.lines.extend([t + q.end for t in extra] if q.end else extra)
    return q


def event_quads(ev: AuditEvent, *, header: bool = True,
                projectors: Sequence[PackProjector] = (),
                strict: bool = False) -> tuple[list[str], list[str]]:
    """The triples of one event as ``"s p o"`` strings: (its run graph's, the shared
    graph's); ``header`` adds its audit record (to the run's). ``projectors``: the loaded
    packs' projection hooks (:mod:`.packproj`), whose triples follow the core's in the run
    graph; ``strict`` makes a failing projector raise (the commit check)."""
    q = _collect(ev, _Quads(), header, projectors, strict)
    return q.lines, q.shared


def event_triples(ev: AuditEvent, *, header: bool = True,
                  projectors: Sequence[PackProjector] = (), strict: bool = False,
                  keep: frozenset[str] | None = None,
                  classes: frozenset[str] | None = None) -> list[str]:
    """All the triples of one event, the shared objects' included (module docstring).

    ``keep`` (core triples without the header only): just those whose predicate is in it,
    in the order they would have among all — the others are never written (the commit
    check's, :mod:`cradle_kg.graph.shape_reach`); with ``classes``, of the ``rdf:type``
    triples just those whose class is in it."""
    if keep is not None:
        if header or projectors:
            raise ValueError("event_triples: `keep` is for the core's triples without header")
        projector = _PROJECTORS.get(ev.kind)
        if projector is None:
            return []
        kept = _KeptQuads(keep, classes)
        projector(kept, ev)
        return kept.lines + kept.shared
    own, shared = event_quads(ev, header=header, projectors=projectors, strict=strict)
    return own + shared


_SHARED_END = f" {_SHARED} .\n"


def project_event(ev: AuditEvent, projectors: Sequence[PackProjector] = ()) -> list[str]:
    """The N-Quads lines of one event (each ending in a newline): in its run's graph,
    and about shared objects in the shared graph — :func:`event_quads`' triples, each
    written with its graph as it is made."""
    q = _collect(ev, _Quads(f" {run_graph(ev.run_id)} .\n", _SHARED_END), True,
                 projectors, False)
    q.lines += q.shared
    return q.lines


def ntriples(triples: Iterable[str]) -> str:
    """The triples as an N-Triples document: each followed by `` .`` and a newline."""
    lines = triples if isinstance(triples, list) else list(triples)
    return " .\n".join(lines) + " .\n" if lines else ""


def project(events: Iterable[AuditEvent],
            projectors: Sequence[PackProjector] = ()) -> Iterator[str]:
    for ev in events:
        yield from project_event(ev, projectors)


def project_retractions(events: Iterable[AuditEvent]) -> Iterator[str]:
    for ev in events:
        graph = run_graph(ev.run_id)
        yield from (f"{t} {graph} .\n" for t in event_retractions(ev))


def project_nquads(events: Iterable[AuditEvent],
                   projectors: Sequence[PackProjector] = ()) -> str:
    """The whole projection as one N-Quads text, sorted and deduplicated (canonical form)."""
    evs = list(events)
    return "".join(sorted(set(project(evs, projectors)) - set(project_retractions(evs))))
