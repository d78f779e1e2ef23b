"""Human approvals: runtime objects with their own lifecycle, kept in the journal (§15).

An approval is bound to one Decision **and** to the digest of the exact action (tool,
target, arguments, environment). Its state is a projection of journal events whose
subject is that digest:

``approval.requested`` → ``approval.viewed``* → ``approval.decided`` → ``approval.consumed``

An approved approval whose action has not run under it can be taken back by a person
(``approvals revoke``): a second ``approval.decided``, of status ``revoked``
(:meth:`ApprovalBook.revoke_event`); it then authorizes nothing (``tests/security/
test_304``). A reusable approval can be taken back after its use too: what ran under it
stays authorized, nothing more runs under it (``test_316``).

A view is journaled when it says something new (:func:`view_is_news`): a viewer's first
look at an approval, and their first after its action's events moved on; polling in
between is answered, not journaled.

Guarantees (each has a test that tries to break it):

* the identity that proposed, the principal it acts for, and the agent itself can never
  approve the action;
* an approve-once is consumed by the first execution — the consumption claims a UNIQUE
  key in the journal, so two executions cannot both use it, even from two processes;
* an expired approval authorizes nothing; an approval for one digest authorizes no other;
* a revoked approval authorizes nothing more, and a revoke and a use racing are decided
  under the journal's writer's lock: never an intent after the revoke (an approve-once's
  revoke is refused once its use landed; a reusable one's is written after it);
* approvers are configured with roles and scopes and authenticate with a token whose
  sha256 is in the configuration; a refused attempt is journaled (``approval.refused``).

What an approval authorizes:

* **once** (the default): exactly one execution of the exact action (its digest), in
  the run that asked for it, by a proposer the approver is not excluded for;
* **within a scope** (``--scope S``): the approver must hold scope ``S`` (or ``*``); the
  approval is reusable — it authorizes the *same action digest* any number of times in
  the run that asked for it (other steps, other attempts, other proposers the approver is
  not excluded for) until its expiry. It never authorizes a different digest: change one
  argument and a new approval is needed;
* **until T** (``--until T``): reusable in the same way, and nothing at or after T.

An approval covers the action under the tool's version it was asked for (the ``tool_ref``,
``id@version``, of the gate-1 decision that asked): after a pack upgrade, or an upstream
tool re-pinned (``mcp proxy``: ``upstream-<pin>``), the action asks a person again, and the
reasons say which approval was given for which version (``tests/security/test_146``). The
digest is unchanged; an approval whose decision the journal does not hold with a version
covers the action as before. Likewise it covers the action only while the policies ask
within the scope it was asked within: sent to another desk since (or to ``*``), the action
asks a person again (``tests/security/test_412``). A proposal that waits on a pending
approval asked within another scope than the policies name now asks anew within it, and
the runtime closes the old one (:func:`superseded_event`, ``test_516``).

An approval never leaves its run: the approval is bound to the Decision that asked for
it, and the run's graph must show the approval behind every irreversible action the
run executed (integrity rule 2), so another run asks for its own.

The exclusions are checked against the approval's request *and* against each proposer
that wants to use it, so a reusable approval cannot become a self-approval.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from ..canonical import token_hash
from ..config import Approver, RuntimeConfig
from ..errors import ApprovalError, ApprovalUsedError, UnknownNameError
from ..inputs import check_page
from ..records import RUNTIME_ACTOR, ApprovalStatus, AuditEvent, HumanApproval, Proposal
from ..redaction import mask_action, secret_names
from ..storage import Decider, Journal, NewEvent
from .context import DECISION_CLAIM_PREFIX, REVOKE_CLAIM_PREFIX


@dataclass(frozen=True)
class Revocation:
    """Who took an approved approval back, when, and why (its ``revoked`` decision).

    ``used``: a reusable approval revoked after actions ran under it (the revoke says so,
    ``tests/security/test_316``): those stay authorized, its further uses stop. ``uses``:
    how many ran under it before the revoke — counted when the approval is read
    (:meth:`ApprovalBook.counted`), None until then."""

    by: str
    at: datetime
    reason: str | None
    used: bool = False
    #: the seq of the revoke, and of the approving decision it took back
    seq: int = 0
    approved_seq: int = 0
    uses: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"by": self.by, "at": self.at.isoformat(), "reason": self.reason,
                "used": self.used, **({} if self.uses is None else {"uses": self.uses})}

    def said(self) -> str:
        """After how many uses it was revoked, as the shell says it (empty: none ran)."""
        if self.uses:
            return f" after {self.uses} use" + ("s" if self.uses != 1 else "")
        return " after its use" if self.used else ""


@dataclass(frozen=True)
class ApprovalState:
    approval: HumanApproval
    #: identities that may never approve it
    excluded: tuple[str, ...]
    #: set once a person revoked it (its status then ``revoked``)
    revoked: Revocation | None = None
    #: the scope its request was asked within (the policies' ``@approval_scope``), whatever
    #: scope a decision then gave it: what it covers (:meth:`ApprovalBook.usable`)
    asked_scope: str | None = None

    def shown(self) -> dict[str, Any]:
        """What a view adds to the approval's record: who revoked it, when and why."""
        return {"revoked": self.revoked.to_dict()} if self.revoked is not None else {}

    def record(self, now: datetime) -> dict[str, Any]:
        """The approval's record as a view shows it: its status as of ``now`` — one whose
        expiry passed reads ``expired``, as ``approvals list`` says (before, ``approvals
        show`` and the API's approval views said ``approved``: tests/security/test_342)."""
        return {**self.approval.model_dump(mode="json"),
                "status": effective_status(self.approval, now).value}


def latest_now(journal: Journal, now: datetime) -> datetime:
    """The later of ``now`` (the runtime's clock) and the journal server's clock (one read;
    SQLite: ``now``, one host's clock): what an approval's expiry is read against. An
    approval covers an action only while unexpired on both — a worker whose clock is behind
    no longer stretches it past its expiry on every right clock, and one ahead refuses it
    earlier, as it did (fail closed; its intent's ``at`` stays before the expiry, as the
    journal's invariant and the graph's shape read it: ``tests/security/test_595``)."""
    server = journal.server_time()
    return now if server is None or server <= now else server


def shown_now(journal: Journal, now: datetime, approvals: Iterable[HumanApproval]
              ) -> datetime:
    """What a view of ``approvals`` (``approvals list``/``show``, the API's, the web
    page's) reads their status against: as :func:`latest_now` decides — the server's clock
    too, one read for the whole listing, and none when no approval shown is approved with
    an expiry. Before, the views read the worker's clock alone: a worker behind showed
    ``approved`` an approval that covered nothing any more (``tests/security/test_624``)."""
    if any(a.status is ApprovalStatus.APPROVED and a.expires_at is not None
           for a in approvals):
        return latest_now(journal, now)
    return now


def effective_status(approval: HumanApproval, now: datetime) -> ApprovalStatus:
    """The status as of ``now``: an approval whose expiry has passed reads ``expired``."""
    if (approval.status is ApprovalStatus.APPROVED and approval.expires_at is not None
            and approval.expires_at <= now):
        return ApprovalStatus.EXPIRED
    return approval.status


def why_not_decidable(st: ApprovalState, approver: Approver | None) -> str | None:
    """Why ``approver`` may not decide the approval ``st`` now, as a code — ``excluded``
    (its request excludes them: their agent proposed it, or on their behalf),
    ``not_pending`` (decided already), ``outside_scopes`` (asked within no scope of
    theirs), ``not_an_approver`` — or None: they may. Read from the folded state alone, as
    :meth:`ApprovalBook.decision_event` checks it (``tests/security/test_253``)."""
    a = st.approval
    if approver is None:
        return "not_an_approver"
    if approver.id in st.excluded:
        return "excluded"
    if a.status is not ApprovalStatus.PENDING:
        return "not_pending"
    if "*" not in approver.scopes and (not a.scope or a.scope not in approver.scopes):
        return "outside_scopes"
    return None


def excluded_for_agent(config: RuntimeConfig, agent_id: str) -> set[str]:
    """Who may never approve what this agent proposes: the agent and its principal."""
    agent = config.agent(agent_id)
    return {agent_id, *([agent.acts_for] if agent and agent.acts_for else [])}


def excluded_for(config: RuntimeConfig, proposal: Proposal) -> set[str]:
    """Who may never approve this proposal: the agent, its principal, on whose behalf."""
    agent = config.agent(proposal.agent_id)
    return {x for x in (proposal.agent_id, agent.acts_for if agent else None,
                        proposal.on_behalf_of) if x}


def run_starter(journal: Journal, run_id: str) -> str | None:
    """Who asked for a workflow run, as its ``workflow.started`` recorded it (``started_by``:
    the JSON API's caller), or None: the run's first event, one row. They never approve
    what the run's steps propose — a request and its approval by one person
    (``tests/security/test_178``)."""
    first = next(iter(journal.events(run_id=run_id, batch=1)), None)
    if first is None or first.kind != "workflow.started":
        return None
    who = first.payload.get("started_by")
    return who if isinstance(who, str) and who else None


def excluded_for_run(journal: Journal, config: RuntimeConfig, run_id: str) -> set[str]:
    """Who may never close what a run escalated: its agent (its first proposal's or
    claim's, else a workflow run's agent), the person that agent acts for, and who started
    the run — a second look is someone else's (``tests/security/test_179``). Two probes."""
    out: set[str] = set()
    owner = journal.run_agent(run_id)
    first = next(iter(journal.events(run_id=run_id, batch=1)), None)
    if first is not None and first.kind == "workflow.started":
        agent = first.payload.get("agent")
        owner = owner or (agent if isinstance(agent, str) and agent else None)
        who = first.payload.get("started_by")
        if isinstance(who, str) and who:
            out.add(who)
    if owner is not None:
        out |= excluded_for_agent(config, owner)
    return out


def excluded_for_task(journal: Journal, config: RuntimeConfig, run_id: str,
                      proposal_id: str | None) -> set[str]:
    """Who may never close a human task of ``run_id`` about ``proposal_id`` (its opening's
    ``proposal_id``): :func:`excluded_for_run`, and the agent of that proposal (each
    ``proposal.received`` of it in the run), the person it acts for and on whose behalf it
    was proposed, as for an approval of it (:func:`excluded_for`). INVARIANT: the task's
    own agent, not only the run's first: the host's code runs several agents in one run,
    and the principal of the second closed her own agent's escalation there
    (``tests/security/test_599``). One probe more."""
    out = excluded_for_run(journal, config, run_id)
    if proposal_id:
        for received in journal.events_for_subject(proposal_id, run_id=run_id,
                                                   kinds=("proposal.received",)):
            out |= excluded_for_agent(config, received.actor)
            proposal = received.payload.get("proposal")
            behalf = proposal.get("on_behalf_of") if isinstance(proposal, dict) else None
            if isinstance(behalf, str) and behalf:
                out.add(behalf)
    return out


def _fold(events: Sequence[Any]) -> dict[str, ApprovalState]:
    """Rebuild every approval of one action digest from its journal events."""
    states: dict[str, ApprovalState] = {}
    approving: dict[str, int] = {}  # approval id -> the seq of its approving decision
    for ev in events:
        p = ev.payload
        if ev.kind == "approval.requested":
            approval = HumanApproval.model_validate(p["approval"])
            states[approval.id] = ApprovalState(approval, tuple(p.get("excluded", ())),
                                                asked_scope=approval.scope)
        elif ev.kind == "approval.decided" and p["approval_id"] in states:
            st = states[p["approval_id"]]
            if st.revoked is not None:  # INVARIANT: taken back for good
                continue
            if p["status"] == ApprovalStatus.REVOKED:  # the approving decision kept
                states[st.approval.id] = replace(
                    st, approval=st.approval.model_copy(
                        update={"status": ApprovalStatus.REVOKED}),
                    revoked=Revocation(str(p["approver_id"]), ev.at, p.get("reason"),
                                       used=p.get("used") is True, seq=ev.seq,
                                       approved_seq=approving.get(st.approval.id, 0)))
                continue
            if p["status"] == ApprovalStatus.APPROVED:
                approving[st.approval.id] = ev.seq
            states[st.approval.id] = replace(
                st, approval=st.approval.model_copy(update={
                    "status": ApprovalStatus(p["status"]),
                    "approver_id": p["approver_id"],
                    "decided_at": ev.at,
                    "scope": p.get("scope") or st.approval.scope,
                    "expires_at": (datetime.fromisoformat(p["expires_at"].replace("Z", "+00:00"))
                                   if p.get("expires_at") else None),
                    "once": bool(p.get("once", True)),
                    "reason": p.get("reason"),
                }),
            )
        elif ev.kind == "approval.consumed" and p["approval_id"] in states:
            st = states[p["approval_id"]]
            states[st.approval.id] = replace(
                st, approval=st.approval.model_copy(update={"consumed": True}))
    return states


def lapsed(journal: Journal, request: AuditEvent, now: datetime) -> bool:
    """Whether the approval ``request`` asked for, once approved, authorizes nothing at
    ``now``: its expiry passed, or a person revoked it — its decisions in its run folded
    (one read of the digest's decisions there). What a key's approved, not run approval
    (``unrun_approvals``) is read against when the key is checked: no background job
    removes its row (``tests/security/test_306``)."""
    approval_id = _requested_id(request)
    moved = journal.events_for_subject(request.subject, run_id=request.run_id,
                                       kinds=("approval.decided",))
    found = _fold([request, *(e for e in moved if e.seq > request.seq)])
    st = found.get(approval_id) if approval_id is not None else None
    if st is not None and st.approval.expires_at is not None:  # on the server's clock too
        now = latest_now(journal, now)
    return st is not None and effective_status(st.approval, now) in (
        ApprovalStatus.EXPIRED, ApprovalStatus.REVOKED)


def _requested_id(request: AuditEvent) -> str | None:
    """The approval id an ``approval.requested`` event asks for."""
    approval = request.payload.get("approval")
    approval_id = approval.get("id") if isinstance(approval, dict) else None
    return approval_id if isinstance(approval_id, str) else None


#: what :meth:`ApprovalBook.usable` is given for a scope not to compare: no scope is ``*``
#: (a policy's ``@approval_scope`` is an id: letters, digits, ``.``, ``_``, ``:``, ``-``)
ANY_SCOPE: Final = "*"
#: how many of the newest events of an approval's digest (in its run) a view reads to decide
#: whether it is news (:meth:`ApprovalBook.viewed`)
VIEW_LOOKBACK = 16
#: how many revoked approvals' counted uses a process keeps (:meth:`ApprovalBook.counted`)
USES_KEPT = 4096


def view_is_news(events: Sequence[AuditEvent], approval_id: str, viewer: str) -> bool:
    """Whether ``viewer`` looking at ``approval_id`` now tells the audit something it does
    not hold yet: their first view of it, or their first since an event other than a view
    was written about its action (``events``: its digest's — decided, refused, consumed,
    another approval asked). Read from the newest back to the first event that is not a
    view: the views since the digest last moved, at most one per viewer and approval.

    Before, every ``GET /api/approvals/{id}`` appended an ``approval.viewed``: one
    approver's token, polling, grew the journal without bound (``tests/security/test_47``)."""
    for ev in reversed(events):
        if ev.kind != "approval.viewed":
            return True  # moved on since any view of theirs (or they never looked)
        if ev.actor == viewer and ev.payload.get("approval_id") == approval_id:
            return False
    return True


def asking_decision(made: Sequence[AuditEvent], request: AuditEvent) -> dict[str, Any] | None:
    """The gate-1 decision that asked for an approval: of ``made`` (the events of its
    decision's id), the last ``decision.made`` of its run before its request."""
    for ev in reversed(made):
        decision = ev.payload.get("decision")
        if (ev.kind == "decision.made" and ev.run_id == request.run_id
                and ev.seq < request.seq and isinstance(decision, dict)):
            return decision
    return None


def decision_tool_ref(decision: dict[str, Any] | None) -> str | None:
    """The tool's ``id@version`` a decision recorded (its provenance's ``tool_ref``)."""
    provenance = decision.get("provenance") if isinstance(decision, dict) else None
    ref = provenance.get("tool_ref") if isinstance(provenance, dict) else None
    return ref if isinstance(ref, str) else None


@dataclass(frozen=True)
class ToolVersions:
    """The tool's version an approval covers (``asked``: the ``tool_ref`` of the decision
    that asked for it) and the version registered now (``now``), what a person is shown
    before deciding. When they differ, the approval covers nothing under the version now:
    it can still be decided (the decision is journaled as any other), and the action asks a
    person again, under the version now, when it runs (``tests/security/test_146``)."""

    asked: str | None
    now: str | None

    @property
    def changed(self) -> bool:
        return self.asked is not None and self.now is not None and self.asked != self.now

    def note(self) -> str | None:
        """What a person must know before deciding: the tool changed since the request."""
        if not self.changed:
            return None
        return (f"asked under `{self.asked}`; the tool is now `{self.now}`: approving covers "
                f"only `{self.asked}`, so the action will ask a person again under "
                f"`{self.now}`")

    def to_dict(self) -> dict[str, Any]:
        return {"asked": self.asked, "now": self.now, "changed": self.changed,
                "note": self.note()}


class ApprovalBook:
    """Reads approvals from the journal; writes go through the journal too."""

    def __init__(self, journal: Journal, config: RuntimeConfig,
                 approvers: Callable[[], tuple[Approver, ...]] | None = None) -> None:
        self.journal = journal
        self.config = config
        #: the approvers as the home's configuration says them now (a runtime that read
        #: its configuration from the file: :class:`~cradle_kg.config.ConfigFile`)
        self.approvers = approvers or (lambda: self.config.approvers)
        #: the uses counted of revoked approvals (:meth:`counted`), by approval, run and
        #: the range's two seqs: the :data:`USES_KEPT` counted last
        self._uses: dict[tuple[str, str, int, int], int] = {}
        self._uses_lock = threading.Lock()

    def approver(self, approver_id: str) -> Approver | None:
        """The approver ``approver_id`` as the configuration says now: one removed, or whose
        token was replaced, since the process started is no longer the one that was
        (``tests/security/test_190``)."""
        return next((a for a in self.approvers() if a.id == approver_id), None)

    def decided_for_digest(self, digest: str, *, run_id: str) -> list[ApprovalState]:
        """The approvals of one action digest that run asked for *and* a person decided
        (the only ones an action may run under): folded from that run's decisions and
        uses of the digest and the requests they name (one row each) — not from every
        approval the run asked for it. An agent proposing one action again and again in
        one run (an MCP session is one run; nothing runs, no limit counts it) asks for an
        approval each time, and each submission folded them all (``tests/security/
        test_87``); a decision is a person's, as many as people make."""
        subject = "approval:" + digest
        moved = self.journal.events_for_subject(
            subject, run_id=run_id, kinds=("approval.decided", "approval.consumed"))
        asked: list[AuditEvent] = []
        for approval_id in dict.fromkeys(e.payload.get("approval_id") for e in moved
                                         if e.kind == "approval.decided"):
            if not isinstance(approval_id, str):
                continue
            request = self.journal.approval_request(approval_id)
            if request is not None and request.subject == subject and request.run_id == run_id:
                asked.append(request)
        events = sorted([*asked, *moved], key=lambda e: e.seq)
        return [st for st in _fold(events).values() if st.approval.run_id == run_id]

    def usable(self, digest: str, now: datetime, proposer: str, *, run_id: str,
               also_excluded: Collection[str] = (), tool_ref: str | None = None,
               scope: str | None = ANY_SCOPE,
               why: list[str] | None = None) -> HumanApproval | None:
        """An approved, unexpired, unconsumed approval of this exact action in this run,
        asked for by this proposer (another agent's identical action needs its own).

        ``also_excluded``: identities that may not approve *this* use (the proposer's
        principal, on whose behalf it acts) besides those excluded at request time.

        ``tool_ref``: the tool's ``id@version`` now — an approval asked for under another
        version of it (:meth:`asked_under`) covers nothing: the digest names the action,
        not what the tool does, and a pack upgraded or an upstream tool re-pinned while the
        approval waited ran behaviour no person approved (``tests/security/test_146``);
        each such approval is said in ``why``. An approval whose request's decision names
        no tool version (none recorded) is used as before.

        ``scope``: the scope the policies ask within now (None: within none, for an approver
        holding ``*``; :data:`ANY_SCOPE`: not compared — a caller that goes through gate 1
        again, which compares it). INVARIANT: an approval covers its action only within the
        scope it was asked within, whatever scope its decision gave it: policies changed
        since to send the action to another desk (or to ``*``) make it cover nothing, and
        the action asks a person again — before, a desk's reusable approval went on running
        what the policies now sent elsewhere, on the word of an approver who may not decide
        it (``tests/security/test_412``); each such approval is said in ``why``.
        """
        latest: datetime | None = None  # the server's clock, read once when needed
        for st in self.decided_for_digest(digest, run_id=run_id):
            a = st.approval
            if a.status is not ApprovalStatus.APPROVED or a.approver_id is None:
                continue
            if a.run_id != run_id:  # INVARIANT: an approval never leaves its run
                continue
            if a.requested_by != proposer:  # INVARIANT: nor the agent whose action it approved
                continue
            if (a.approver_id in st.excluded or a.approver_id == proposer
                    or a.approver_id in also_excluded):
                continue
            if a.expires_at is not None:
                # INVARIANT: unexpired on the journal server's clock too (test_595)
                latest = latest_now(self.journal, now) if latest is None else latest
                if a.expires_at <= latest:
                    continue
            if a.once and a.consumed:
                continue
            if scope != ANY_SCOPE and st.asked_scope != scope:
                if why is not None:
                    why.append(f"approval `{a.id}` was asked within {_within(st.asked_scope)}"
                               f", and the policies ask within {_within(scope)} now: it "
                               "covers no other")
                continue
            if tool_ref is not None:
                asked = self.asked_under(a)
                if asked is not None and asked != tool_ref:
                    if why is not None:
                        why.append(f"approval `{a.id}` was given for `{asked}`, and the "
                                   f"tool is now `{tool_ref}`: it covers no other version")
                    continue
            return a
        return None

    def asked_under(self, approval: HumanApproval) -> str | None:
        """The tool's ``id@version`` when ``approval`` was asked for: the ``tool_ref`` of
        the gate-1 decision that asked (its ``decision.made`` last before the request: one
        probe of the request, one subject read in its run), or ``None`` when the journal
        holds none."""
        request = self.journal.approval_request(approval.id)
        if request is None:
            return None
        decision = asking_decision(self.journal.events_for_subject(
            approval.decision_id, run_id=approval.run_id, kinds=("decision.made",)),
            request)
        return decision_tool_ref(decision)

    def all(self) -> list[ApprovalState]:
        """Every approval ever requested, in the order they were asked for (the inbox)."""
        return [st for st, _ in self.all_read()]

    def all_read(self) -> list[tuple[ApprovalState, list[AuditEvent]]]:
        """Every approval with the events of its digest it was folded from — each digest
        read once: what also needs an approval's proposal (the inbox) finds it in them
        (:meth:`requested_proposal`) instead of reading the digest again for each of its
        approvals (``tests/security/test_60``)."""
        out: list[tuple[ApprovalState, list[AuditEvent]]] = []
        for subject in self.journal.approval_subjects():
            events = self.journal.events_for_subject(subject)
            out.extend((st, events) for st in _fold(events).values())
        return out

    def page(self, *, limit: int | None, offset: int = 0, requested_by: str | None = None
             ) -> tuple[list[ApprovalState], int]:
        """One page of the approvals, in the order they were asked for, and how many there
        are (``requested_by``: only those that agent's proposals asked for, filtered before
        the page): each approval its request and the decisions and uses of its digest in its
        run (read once per digest and run of the page) — not every approval ever asked
        (``test_84``), nor every approval its run asked for the action, which an agent asks
        for as many of as it likes (``test_100``). A ``limit`` or ``offset`` no journal can
        bind is an ``InputError`` (``test_96``)."""
        check_page(limit=limit, offset=offset)
        requests, total = self.journal.approval_requests(limit=limit, offset=offset,
                                                         requested_by=requested_by)
        moved: dict[tuple[str, str], list[AuditEvent]] = {}
        out: list[ApprovalState] = []
        for request in requests:
            key = (request.subject, request.run_id)
            if key not in moved:
                moved[key] = self.journal.events_for_subject(
                    request.subject, run_id=request.run_id,
                    kinds=("approval.decided", "approval.consumed"))
            approval_id = _requested_id(request)
            found = _fold([request, *(e for e in moved[key] if e.seq > request.seq)])
            if approval_id is not None and approval_id in found:
                out.append(self.counted(found[approval_id]))
        return out, total

    def pending_page(self, *, limit: int | None = None, offset: int = 0,
                     run_id: str | None = None, requested_by: str | None = None,
                     decider: Decider | None = None
                     ) -> tuple[list[tuple[ApprovalState, AuditEvent]], int]:
        """One page of the approvals no person decided yet, in the order they were asked
        for, each with its request (what :meth:`requested_proposal` reads), and how many
        there are; ``run_id``, ``requested_by``: that run's, that agent's. Read from the
        derived ``undecided_approvals``, filtered and paged in the query: one row per
        approval listed (``decider``: without those whose request excludes them). Before,
        every undecided approval's digest was read in every run, then paged and filtered:
        another agent's requests made every approver's poll, every agent's page and every
        run's view grow (``tests/security/test_100``). An approval no one decided is its
        request alone (a use comes after a decision)."""
        check_page(limit=limit, offset=offset)
        requests, total = self.journal.approval_requests(
            undecided=True, run_id=run_id, requested_by=requested_by, limit=limit,
            offset=offset, decider=decider)
        out: list[tuple[ApprovalState, AuditEvent]] = []
        for request in requests:
            approval_id = _requested_id(request)
            found = _fold([request])
            if approval_id is not None and approval_id in found:
                out.append((found[approval_id], request))
        return out, total

    def for_run(self, run_id: str) -> list[ApprovalState]:
        """The approvals a run asked for: its approval subjects found in ``approval_ids``
        (nothing decoded), each folded from its events in the run — not every event of
        the run."""
        return [st for subject in self.journal.approval_subjects(run_id=run_id)
                for st in _fold(self.journal.events_for_subject(subject, run_id=run_id)).values()
                if st.approval.run_id == run_id]

    def decided_for_run(self, run_id: str) -> list[ApprovalState]:
        """The approvals a run asked for that a person decided (what ``resume`` may go on
        with): the run's approval subjects found in ``approval_ids`` (nothing decoded),
        each folded from its decisions in the run (:meth:`decided_for_digest`) — not every
        event of the run, nor every approval it asked for (``tests/security/test_88``)."""
        return [st for subject in self.journal.approval_subjects(run_id=run_id)
                for st in self.decided_for_digest(subject.removeprefix("approval:"),
                                                  run_id=run_id)]

    def get(self, approval_id: str) -> ApprovalState:
        """One approval: its request (one probe of ``approval_ids``) and the decisions and
        uses of its digest in its run — not the other approvals the run asked for the
        action, which an agent writes as many of as it likes (an MCP call waiting for an
        approval asks this every poll: ``tests/security/test_88``)."""
        request = self.journal.approval_request(approval_id)
        if request is None or request.kind != "approval.requested":
            raise UnknownNameError(f"unknown approval `{approval_id}`")
        moved = self.journal.events_for_subject(
            request.subject, run_id=request.run_id,
            kinds=("approval.decided", "approval.consumed"))
        return self.counted(self.state_in(
            [request, *(e for e in moved if e.seq > request.seq)], approval_id))

    def counted(self, st: ApprovalState) -> ApprovalState:
        """``st`` with its revoke's :attr:`Revocation.uses` counted: for a reusable
        approval revoked after its use, the intents of its run that name it between its
        approving decision and its revoke (one range of the run's events); none ran under
        any other revoked approval (its revoke was written only while none had)."""
        r = st.revoked
        if r is None or r.uses is not None:
            return st
        if not r.used:
            return replace(st, revoked=replace(r, uses=0))
        # INVARIANT: counted once per process and approval — the range ends at the revoke,
        # and no event is ever written before a seq already written: the same count at
        # every look. Before, every read counted it again, and the agent whose approval it
        # was fills the range (its run) and polls it (tests/security/test_331)
        key = (st.approval.id, st.approval.run_id, r.approved_seq, r.seq)
        with self._uses_lock:
            uses = self._uses.get(key)
        if uses is None:
            uses = self.journal.approval_uses(st.approval.id, st.approval.run_id,
                                              after=r.approved_seq, before=r.seq)
            with self._uses_lock:
                while len(self._uses) >= USES_KEPT:
                    del self._uses[next(iter(self._uses))]
                self._uses[key] = uses
        return replace(st, revoked=replace(r, uses=uses))

    def viewed(self, approval_id: str) -> tuple[ApprovalState, list[AuditEvent]]:
        """One approval (:meth:`get`) and the newest events of its digest in its run, at
        most :data:`VIEW_LOOKBACK`, oldest first — what :func:`view_is_news` decides on.
        Read from the newest end (``Journal.subject_events`` of every kind): a view reads as many
        rows whatever the agent asked for the action in the run; before, every event of
        the digest there, each poll (``tests/security/test_92``). When the views since the
        digest last moved are more than the lookback, the view counts as news (one more
        ``approval.viewed``, which then ends the next view's walk): a view that is news
        is never left out."""
        state = self.get(approval_id)
        recent = self.journal.subject_events(
            "approval:" + state.approval.action_digest, None, limit=VIEW_LOOKBACK,
            run_id=state.approval.run_id)
        return state, recent[::-1]

    def read(self, approval_id: str) -> tuple[ApprovalState, list[AuditEvent]]:
        """One approval and the events of its digest *in its run* it was folded from (one
        probe for the subject and run, one read of those events). Every event about an
        approval is written in its run — asked, viewed, refused, decided, used — so the
        other runs' requests of the same action are never decoded (``tests/security/
        test_71``: before, a view decoded every run's, three times). A decision made on
        it is written once by its key (:meth:`decision_event`), not over the digest's
        newest event in any run, which every run's request moves (``test_333``)."""
        place = self.journal.approval_place(approval_id)
        if place is None:
            raise UnknownNameError(f"unknown approval `{approval_id}`")
        subject, run_id = place
        events = self.journal.events_for_subject(subject, run_id=run_id)
        return self.state_in(events, approval_id), events

    @staticmethod
    def state_in(events: Sequence[AuditEvent], approval_id: str) -> ApprovalState:
        """One approval, folded from ``events`` (those of its digest)."""
        found = _fold(events)
        if approval_id not in found:
            raise UnknownNameError(f"unknown approval `{approval_id}`")
        return found[approval_id]

    def requested_proposal(self, approval: HumanApproval,
                           events: Sequence[AuditEvent] | None = None) -> Proposal:
        """The proposal that asked for this approval, as it was recorded (found in
        ``events`` when they are the digest's events already read, else read here) —
        secrets and all: what runs once approved. What a person or an agent is *shown* of
        it is :meth:`shown_request`."""
        return Proposal.model_validate(self._request(approval, events).payload["proposal"])

    def shown_request(self, approval: HumanApproval,
                      events: Sequence[AuditEvent] | None = None
                      ) -> tuple[Proposal, dict[str, Any]]:
        """The proposal that asked for this approval, and its action as it may be shown:
        the tool's secret arguments masked (:mod:`cradle_kg.redaction`)."""
        request = self._request(approval, events)
        proposal = Proposal.model_validate(request.payload["proposal"])
        return proposal, mask_action(proposal.action.model_dump(mode="json"),
                                     secret_names(request.payload))

    def _request(self, approval: HumanApproval,
                 events: Sequence[AuditEvent] | None) -> AuditEvent:
        if events is None:
            # its request, one probe (not every event of the digest in the run: test_88)
            request = self.journal.approval_request(approval.id)
            events = [request] if (
                request is not None and request.run_id == approval.run_id
                and request.subject == "approval:" + approval.action_digest) else []
        for event in events:
            if (event.kind == "approval.requested"
                    and event.payload["approval"]["id"] == approval.id):
                return event
        raise UnknownNameError(f"no proposal recorded for approval `{approval.id}`")

    def token_holder(self, token: str) -> str | None:
        """The approver ``token`` authenticates (each configured token hash compared in
        constant time), or None: no approver, or more than one (a token two approvers share
        names neither)."""
        digest = token_hash(token)
        held = [a.id for a in self.config.approvers
                if hmac.compare_digest(digest, a.token_hash)]
        return held[0] if len(held) == 1 else None

    def authenticate(self, approver_id: str, token: str) -> None:
        approver = self.approver(approver_id)
        if approver is None:
            raise ApprovalError(f"`{approver_id}` is not a configured approver")
        if not hmac.compare_digest(token_hash(token), approver.token_hash):
            raise ApprovalError(f"the token does not authenticate `{approver_id}`")

    def decision_event(self, st: ApprovalState, *, approver_id: str, token: str,
                       status: ApprovalStatus, now: datetime, once: bool = True,
                       scope: str | None = None, until: datetime | None = None,
                       reason: str | None = None) -> NewEvent:
        """Check who may decide, and build the ``approval.decided`` event."""
        self._check_person(st, approver_id, token)
        a = st.approval
        if a.status is not ApprovalStatus.PENDING:
            raise ApprovalError(f"approval `{a.id}` is already `{a.status}`")
        wanted = self._check_scope(a, approver_id, scope)
        # INVARIANT: past on the journal server's clock too (test_595)
        if until is not None and (until <= now or until <= latest_now(self.journal, now)):
            raise ApprovalError("the expiry time is already past")
        if status is ApprovalStatus.REJECTED and not reason:
            raise ApprovalError("a rejection needs a reason")
        payload: dict[str, Any] = {
            "approval_id": a.id, "status": str(status), "approver_id": approver_id,
            "scope": wanted, "once": once,
            "expires_at": until.isoformat() if until else None, "reason": reason,
            "delay_seconds": round((now - a.requested_at).total_seconds(), 3),
            "decision_id": a.decision_id,
        }
        # INVARIANT: decided once, by a key of its own (UNIQUE): of two decisions racing
        # one lands, the other reads it decided, refused — not over the digest's newest
        # event, which every run's request for the same action moves (test_333). The key
        # is no part of the payload: what the event says is as before
        return NewEvent(run_id=a.run_id, kind="approval.decided",
                        subject="approval:" + a.action_digest, actor=approver_id, at=now,
                        payload=payload, idem_key=DECISION_CLAIM_PREFIX + a.id)

    def revoke_event(self, st: ApprovalState, *, approver_id: str, token: str,
                     reason: str, now: datetime,
                     used: Callable[[], bool] = lambda: False) -> NewEvent:
        """Check that ``approver_id`` may take the approval ``st`` back, and build its
        ``approval.decided`` of status ``revoked``: one who may decide it (its exclusions,
        its scope, as :meth:`decision_event`), of an approved approval (an expired one too:
        saying so is harmless). An approve-once whose action ran under it (consumed, or
        ``used()``, read last: an intent names it) has nothing left to stop:
        :class:`~cradle_kg.errors.ApprovalUsedError` (one written since it was read is
        found by the journal under its writer's lock, :class:`~cradle_kg.storage.
        ApprovalGuard`). A reusable approval is revoked used or not: used, the revoke says
        so (``"used": true``) — the actions that ran under it stay authorized, its further
        uses stop (``tests/security/test_316``).

        A status of ``approval.decided``, not a kind of its own: every reader of the
        decisions (the fold here, ``unrun_approvals``, the inbox) already reads the newest
        decision of an approval, and an older cradle-kg on the same journal that does not
        know the status fails on it instead of reading the approval as still approved."""
        self._check_person(st, approver_id, token)
        a = st.approval
        if st.revoked is not None:
            raise ApprovalError(f"approval `{a.id}` is already `revoked` (by "
                                f"`{st.revoked.by}`)")
        if a.status is not ApprovalStatus.APPROVED:
            raise ApprovalError(
                f"approval `{a.id}` is `{a.status}`: only an approved approval can be "
                "revoked" + (" (reject it instead)" if a.status is ApprovalStatus.PENDING
                             else ""))
        ran = (a.once and a.consumed) or used()
        if a.once and ran:
            raise ApprovalUsedError(f"approval `{a.id}` is already used: its action ran "
                                    "under it")
        self._check_scope(a, approver_id, None)
        return NewEvent(run_id=a.run_id, kind="approval.decided",
                        subject="approval:" + a.action_digest, actor=approver_id, at=now,
                        payload={"approval_id": a.id, "status": str(ApprovalStatus.REVOKED),
                                 "approver_id": approver_id, "reason": reason,
                                 "approved_by": a.approver_id,
                                 "decision_id": a.decision_id,
                                 # INVARIANT: said only when an intent named it before: what
                                 # the graph keeps authorized (written unguarded: an intent
                                 # is never taken out of the journal)
                                 **({"used": True} if ran else {})},
                        # INVARIANT: one revoke per approval, by a key of its own (UNIQUE)
                        # — not over the digest's newest event, which every run's request
                        # for the same action moves (tests/security/test_330)
                        idem_key=REVOKE_CLAIM_PREFIX + a.id)

    def _check_person(self, st: ApprovalState, approver_id: str, token: str) -> None:
        """The token authenticates ``approver_id``, who is not excluded from deciding."""
        self.authenticate(approver_id, token)
        if approver_id in st.excluded:
            raise ApprovalError(
                f"`{approver_id}` proposed this action (or acts for its proposer) "
                "and cannot approve it")

    def _check_scope(self, a: HumanApproval, approver_id: str, scope: str | None
                     ) -> str | None:
        """The scope the decision is made within (``scope``, else the approval's), when
        ``approver_id`` may decide within it; else an :class:`ApprovalError`."""
        approver = self.approver(approver_id)
        if approver is None:  # removed from the configuration since it authenticated
            raise ApprovalError(f"`{approver_id}` is not a configured approver")
        if scope and a.scope and scope != a.scope:  # the approver's word never widens it
            raise ApprovalError(f"approval `{a.id}` is asked within scope `{a.scope}`, "
                                f"not `{scope}`")
        wanted = scope or a.scope
        if wanted and "*" not in approver.scopes and wanted not in approver.scopes:
            raise ApprovalError(f"`{approver_id}` may not approve within scope `{wanted}`")
        # INVARIANT: an approver limited to scopes decides only what is asked within one of
        # them; what is asked within none is for `*` — naming their own scope does not make
        # it theirs (before, any approver decided it: tests/security/test_181)
        if not a.scope and "*" not in approver.scopes:
            raise ApprovalError(f"`{approver_id}` may approve only within scopes "
                                f"{_listed(approver.scopes)}: approval `{a.id}` is asked "
                                "within no scope")
        return wanted


def superseded_event(st: ApprovalState, asked: HumanApproval, now: datetime) -> NewEvent:
    """The runtime's ``approval.decided`` of status ``expired`` that closes the pending
    approval ``st`` when its proposal asks anew as ``asked``, within the scope the policies
    ask within now (another than ``st`` was asked within): written with ``asked``'s
    request, claiming ``st``'s decision key — of a person's decision of it and the new
    request, one lands (``tests/security/test_516``). Every reader of decisions reads it
    as any other: the approval leaves the inbox and its agent's waiting count, reads
    ``expired`` with this reason, and no person may decide it any more."""
    a = st.approval
    reason = (f"approval `{a.id}` was asked within {_within(st.asked_scope)}, and the "
              f"policies ask within {_within(asked.scope)} now: closed, asked again as "
              f"approval `{asked.id}`")
    return NewEvent(run_id=a.run_id, kind="approval.decided",
                    subject="approval:" + a.action_digest, actor=RUNTIME_ACTOR, at=now,
                    payload={"approval_id": a.id, "status": str(ApprovalStatus.EXPIRED),
                             "approver_id": RUNTIME_ACTOR, "scope": st.asked_scope,
                             "once": True, "expires_at": None, "reason": reason,
                             "delay_seconds": round((now - a.requested_at).total_seconds(), 3),
                             "decision_id": a.decision_id, "superseded_by": asked.id},
                    idem_key=DECISION_CLAIM_PREFIX + a.id)


def _within(scope: str | None) -> str:
    """A scope as the reasons name it (none: for an approver holding ``*``)."""
    return f"scope `{scope}`" if scope is not None else "no scope (an approver holding `*`)"


def _listed(scopes: Sequence[str]) -> str:
    return ", ".join(f"`{x}`" for x in scopes) or "(none)"
