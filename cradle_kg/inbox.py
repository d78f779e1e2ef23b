"""One inbox for everything that waits for a person.

Three kinds of item, one shape (:class:`InboxItem`):

* ``approval`` — a pending approval of one exact action (its digest, the policies that
  asked for it, the evidence the proposal cited);
* ``task`` — an open human task (an escalation: a failed verification, a repair limit);
* ``step`` — a human step of a workflow run waiting for an answer (its question and the
  answers allowed).

Each item says what it is about, why it waits and the command that answers it. The
inbox reads the journal only; answering goes through the usual, authenticated paths
(``approvals approve``, ``tasks resolve``, ``step decide``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .errors import CradleError, InputError
from .inputs import check_lookup, check_page
from .loop.approvals import (
    ApprovalState,
    ToolVersions,
    asking_decision,
    decision_tool_ref,
    effective_status,
    why_not_decidable,
)
from .loop.escalation import task_from_events, task_scope
from .preview import MAX_ITEM_QUESTION, approval_action, cut, step_input
from .records import ApprovalStatus, AuditEvent
from .storage import Decider

if TYPE_CHECKING:
    from .loop.runtime import Runtime

Kind = Literal["approval", "task", "step"]
KINDS: tuple[Kind, ...] = ("approval", "task", "step")


@dataclass(frozen=True)
class InboxItem:
    kind: Kind
    id: str
    run_id: str
    title: str
    asked_at: str
    #: why it waits, in the runtime's own words (policy reasons, the task's reason, ...)
    reasons: list[str] = field(default_factory=list)
    action: dict[str, Any] | None = None
    digest: str | None = None
    policies: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    #: a step: its id, what it asks and the answers it allows
    step: str | None = None
    question: str | None = None
    answers: list[str] = field(default_factory=list)
    proposed_by: str | None = None
    command: str = ""
    #: an approval: the tool's version it covers (``asked``, the request's ``tool_ref``), the
    #: version registered now (``now``), whether they differ and what that means (``note``)
    tool: dict[str, Any] | None = None
    #: an approval: whether ``action`` is a preview (its JSON past a few KiB), its size,
    #: and the approval's view that carries it whole (``preview.approval_action``)
    action_cut: bool = False
    action_bytes: int | None = None
    whole_action: str | None = None
    #: an approval: how many distinct blobs its proposal cites (``evidence``: the first
    #: :data:`MAX_ITEM_EVIDENCE` of them; the approval's view lists them all)
    evidence_total: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_kinds(values: Iterable[str]) -> tuple[Kind, ...]:
    out: list[Kind] = []
    for v in values:
        match = next((k for k in KINDS if k == v), None)
        if match is None:
            raise InputError(f"unknown inbox kind `{v}`", hint="approval, task or step")
        out.append(match)
    return tuple(out) or KINDS


#: the distinct evidence blobs an approval's item names at most (``evidence_total``: how
#: many its proposal cites; all of them in the approval's view, ``GET /api/approvals/{id}``):
#: before, an item carried the proposal's ``evidence_refs`` as written, up to
#: ``max_evidence_refs`` (256) references, one as often as the agent liked
#: (tests/security/test_413)
MAX_ITEM_EVIDENCE = 16
#: the items one read of the inbox returns over HTTP: by default, and at most
INBOX_PAGE = 200
MAX_INBOX_PAGE = 1000


def inbox(rt: Runtime, *, kinds: Iterable[Kind] = KINDS, run_id: str | None = None,
          requested_by: str | None = None, limit: int | None = None,
          offset: int = 0, decider: str | None = None) -> list[InboxItem]:
    """What waits for a person now, in the order it was asked for (the journal's) — all of
    it, or the page of ``limit`` items after the first ``offset``. ``requested_by``: only
    the approvals that agent's actions asked for (what an agent's token is shown).
    ``decider``: the approver the inbox is for — one limited to scopes is shown only what
    is asked within one of them (:func:`_scoped`); one holding ``*`` all of it — and
    neither what they are excluded from deciding (:func:`decider_for`).

    One kind (an agent's inbox, or ``kinds`` naming one) is paged in its derived table's
    query: a page costs what it shows. A page of several kinds is merged in the derived
    tables first (each item's kind and rank, nothing decoded), then each kind's run of the
    page read as one page of its own query: a page costs what it shows too. The whole inbox
    (no ``limit``) is each kind read and merged (:func:`inbox_size` counts it)."""
    check_page(limit=limit, offset=offset)
    check_lookup(run_id, where="run")
    wanted = _wanted(kinds, requested_by)
    scopes = _limited_to(rt, decider)
    who = decider_for(rt, decider)
    if scopes is not None:
        scoped = _scoped(rt, wanted, run_id, requested_by, scopes, who)
        return scoped[offset:] if limit is None else scoped[offset:offset + limit]
    if limit is not None and len(wanted) == 1:
        # INVARIANT: one kind (an agent's inbox is its approvals) is paged in its query:
        # the items before the page are not read — merged, every skipped approval was
        # built, its request and asking decision decoded (tests/security/test_126)
        return [item for _, item in _read(rt, wanted.pop(), run_id, requested_by, who,
                                          limit=limit, offset=offset)]
    if limit is not None:
        # INVARIANT: several kinds (an approver's inbox) are merged in the query too: the
        # page's kinds and ranks first, then only the page's items built — merged here,
        # every item an offset skipped was built (tests/security/test_129)
        return _merged_page(rt, [k for k in KINDS if k in wanted], run_id, limit, offset, who)
    # each item with the seq of the event that asked: the order every kind is read in, so
    # the pages of the merge add up to the whole (times may tie, or go back, across hosts)
    items = [pair for kind in KINDS if kind in wanted
             for pair in _read(rt, kind, run_id, requested_by, who, limit=None, offset=0)]
    items.sort(key=lambda pair: pair[0])
    return [item for _, item in items[offset:]]


def _merged_page(rt: Runtime, kinds: list[Kind], run_id: str | None, limit: int,
                 offset: int, who: Decider | None) -> list[InboxItem]:
    """The page of several kinds: its order read from the derived tables (each item's kind
    and rank within it), then each kind's items of the page — contiguous in that kind's
    order — read as one page of its query, and put back in the merged order."""
    order = rt.journal.inbox_order(kinds, run_id=run_id, limit=limit, offset=offset,
                                   decider=who)
    built: dict[str, list[tuple[int, InboxItem]]] = {}
    for kind in kinds:
        ranks = [rank for k, rank in order if k == kind]
        if ranks:
            built[kind] = _read(rt, kind, run_id, None, who, limit=len(ranks),
                                offset=ranks[0])
    items = sorted((pair for pairs in built.values() for pair in pairs), key=lambda p: p[0])
    return [item for _, item in items]


def _read(rt: Runtime, kind: Kind, run_id: str | None, requested_by: str | None,
          who: Decider | None, *, limit: int | None, offset: int
          ) -> list[tuple[int, InboxItem]]:
    """The items of one kind, oldest first: the page of ``limit`` after ``offset``
    (``who``: without what they are excluded from, left out in the query)."""
    if kind == "approval":
        return _approvals(rt, run_id, requested_by, limit, offset, who)
    if kind == "task":
        return _tasks(rt, run_id, limit, offset, who)
    return _steps(rt, run_id, limit, offset, who)


def _tasks(rt: Runtime, run_id: str | None, limit: int | None, offset: int,
           who: Decider | None) -> list[tuple[int, InboxItem]]:
    out = []
    opened, _ = rt.journal.human_tasks(run_id=run_id, limit=limit, offset=offset,
                                       decider=who)
    for event, _done in opened:
        t = task_from_events(str(event.payload["task_id"]), [event])
        assert t is not None  # its opening event
        out.append((event.seq, InboxItem(
            kind="task", id=t.id, run_id=t.run_id, title=f"{t.code}: {t.subject}",
            asked_at=t.opened_at.isoformat(), reasons=[t.reason],
            command=f"cradle-kg tasks resolve {t.id} --as WHO --note '...'")))
    return out


def inbox_size(rt: Runtime, *, kinds: Iterable[Kind] = KINDS, run_id: str | None = None,
               requested_by: str | None = None, decider: str | None = None) -> int:
    """How many items :func:`inbox` holds, counted in the journal's derived tables: no
    item read (the page's badge, polled every few seconds, costs three counts). For an
    approver limited to scopes (``decider``), the items they may decide, counted as
    :func:`_scoped` reads them."""
    check_lookup(run_id, where="run")
    wanted = _wanted(kinds, requested_by)
    scopes = _limited_to(rt, decider)
    who = decider_for(rt, decider)
    if scopes is not None:
        return len(_scoped(rt, wanted, run_id, requested_by, scopes, who))
    size = 0
    if "approval" in wanted:
        size += rt.journal.approval_requests(undecided=True, run_id=run_id,
                                             requested_by=requested_by, limit=0,
                                             decider=who)[1]
    if "task" in wanted:
        size += rt.journal.human_tasks(run_id=run_id, limit=0, decider=who)[1]
    if "step" in wanted:
        size += rt.journal.open_step_requests(run_id=run_id, limit=0, decider=who)[1]
    return size


def _limited_to(rt: Runtime, decider: str | None) -> frozenset[str] | None:
    """The scopes ``decider`` is limited to, or None: no decider named (the operator's
    inbox, an agent's) or an approver holding ``*``. A name that is no approver of the home
    is limited to none (shown nothing: fail closed)."""
    if decider is None:
        return None
    approver = rt.config.approver(decider)
    if approver is None:
        return frozenset()
    return None if "*" in approver.scopes else frozenset(approver.scopes)


def decider_for(rt: Runtime, decider: str | None) -> Decider | None:
    """Who the inbox leaves out the exclusions of: the approver ``decider`` and the agents
    that act for them now — an approval their agent asked for (its request names them),
    a task or step of their agent's run or of a run they started is not theirs to decide,
    whatever their scopes (before, an approver holding ``*`` was shown them:
    ``tests/security/test_215``). None: no decider named (the operator's, an agent's)."""
    if decider is None:
        return None
    return Decider(decider, tuple(a.id for a in rt.config.agents if a.acts_for == decider))


def approval_list(rt: Runtime, *, pending: bool, limit: int, offset: int = 0,
                  requested_by: str | None = None, decider: str | None = None
                  ) -> tuple[list[tuple[ApprovalState, str | None]], int]:
    """One page of the approvals (``pending``: those no person decided yet) and how many
    there are — what ``GET /api/approvals`` and ``approvals list`` show. For an approver
    (``decider``) the pending view leaves out, in its query, those they are excluded from
    deciding, as their inbox does (:func:`decider_for`); the whole history keeps them.
    Each approval comes with why ``decider`` may not decide it
    (:func:`~cradle_kg.loop.approvals.why_not_decidable`, None: they may; None for all
    when no decider is named). Before, an approver holding ``*`` was offered every pending
    approval, their own agent's too (``tests/security/test_253``)."""
    if pending:
        rows, total = rt.approvals.pending_page(limit=limit, offset=offset,
                                                requested_by=requested_by,
                                                decider=decider_for(rt, decider))
        states = [st for st, _ in rows]
    else:
        states, total = rt.approvals.page(limit=limit, offset=offset,
                                          requested_by=requested_by)
    if decider is None:
        return [(st, None) for st in states], total
    approver = rt.config.approver(decider)
    return [(st, why_not_decidable(st, approver)) for st in states], total


def _scoped(rt: Runtime, wanted: set[Kind], run_id: str | None, requested_by: str | None,
            scopes: frozenset[str], who: Decider | None) -> list[InboxItem]:
    """The whole inbox an approver limited to ``scopes`` may decide, in the journal's
    order: each item asked within one of them — an approval or a step by the scope it is
    asked within, a task by the scope of the approval its action ran under — as deciding
    it checks (``tests/security/test_181``, ``test_186``). What is asked within no scope is
    for an approver holding ``*``, so it is not theirs (before, it was listed and counted:
    ``test_198``). Read whole, then filtered and paged: a limited approver's inbox costs
    the home's pending items (a few rows each), not its page — no derived table holds the
    scopes yet."""
    workflows: dict[str, Any] = {}
    pairs = [pair for kind in KINDS if kind in wanted
             for pair in _read(rt, kind, run_id, requested_by, who, limit=None, offset=0)
             if _scope_of(rt, pair[1], workflows) in scopes]
    pairs.sort(key=lambda pair: pair[0])
    return [item for _, item in pairs]


def _scope_of(rt: Runtime, item: InboxItem, workflows: dict[str, Any]) -> str | None:
    """The scope ``item`` is asked within (None: within none, or not known — the item is
    then for an approver holding ``*`` only). ``workflows``: the runs' workflows read so
    far (one read of a run's ``workflow.started`` and its file a run)."""
    from .workflow.engine import run_workflow  # the workflow engine: only for a step
    from .workflow.steps import HumanStep

    try:
        if item.kind == "approval":
            return rt.approvals.get(item.id).approval.scope
        if item.kind == "task":
            task = task_from_events(item.id, rt.journal.events_for_subject(item.id))
            return None if task is None else task_scope(rt.journal, rt.approvals, task)
        if item.run_id not in workflows:
            workflows[item.run_id] = run_workflow(rt.journal, item.run_id)
        step = workflows[item.run_id].step(str(item.step))
        return step.scope if isinstance(step, HumanStep) else None
    except CradleError:  # a run whose file changed or went: nobody walks it on
        return None


def _wanted(kinds: Iterable[Kind], requested_by: str | None) -> set[Kind]:
    """An agent (``requested_by``) is shown its own approvals alone."""
    return set(kinds) if requested_by is None else set(kinds) & {"approval"}


def _approvals(rt: Runtime, run_id: str | None, requested_by: str | None,
               limit: int | None, offset: int = 0, who: Decider | None = None
               ) -> list[tuple[int, InboxItem]]:
    """The pending approvals (of one run, of one agent's actions), the oldest ``limit``:
    each its request and its asking decision (read by its id). Before, each approval read
    its run up to that decision and its digest again: an agent that asked for 400
    approvals in one run made every inbox read decode 80,000 events
    (``tests/security/test_60``); then the digests with an approval not decided yet were
    read whole, in every run, and filtered by run and agent afterwards: another agent's
    requests made every run view and every agent's inbox grow (``tests/security/test_100``).
    Now the derived ``undecided_approvals``, filtered and paged in the query: one request
    read per approval listed."""
    now = rt.clock()
    out = []
    pending, _ = rt.approvals.pending_page(run_id=run_id, requested_by=requested_by,
                                           limit=limit, offset=offset, decider=who)
    for st, request in pending:
        a = st.approval
        if effective_status(a, now) is not ApprovalStatus.PENDING:
            continue
        proposal, shown = rt.approvals.shown_request(a, [request])
        decision = _asking_decision(rt, request, a.decision_id)
        policies, reasons = _asking_policies(decision)
        tool = ToolVersions(decision_tool_ref(decision),
                            rt.tool_ref_now(proposal.action.action_type))
        out.append((request.seq, InboxItem(
            kind="approval", id=a.id, run_id=a.run_id,
            title=f"{proposal.action.action_type} on {proposal.action.target}",
            asked_at=a.requested_at.isoformat(), reasons=reasons,
            **approval_action(a.id, shown), digest=a.action_digest,
            policies=policies, evidence=list(proposal.evidence_items[:MAX_ITEM_EVIDENCE]),
            evidence_total=len(proposal.evidence_items),
            proposed_by=proposal.agent_id, tool=tool.to_dict(),
            command=f"cradle-kg approvals approve {a.id} --as WHO")))
    return out


def _asking_decision(rt: Runtime, request: AuditEvent, decision_id: str
                     ) -> dict[str, Any] | None:
    """The decision that asked for a person: its own event, found by its id (the subject of
    its ``decision.made``, a namespace no proposal may take) — one index probe, whatever the
    run holds; the last of its run before the request (what the approval covers: the same
    as :meth:`~cradle_kg.loop.approvals.ApprovalBook.asked_under`)."""
    made = [e for e in rt.journal.events_for_subject(decision_id)
            if isinstance(e.payload.get("decision"), dict)
            and e.payload["decision"].get("id") == decision_id]
    return asking_decision(made, request)


def _asking_policies(d: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """The policies of the decision that asked for a person, and its reasons."""
    if d is None:
        return [], []
    results = d.get("policy_results", [])
    asking = [str(r["policy_id"]) for r in results
              if r.get("annotations", {}).get("requires_approval")]
    return (asking or [str(r["policy_id"]) for r in results if r.get("determining")],
            [str(r) for r in d.get("reasons", [])])


def _steps(rt: Runtime, run_id: str | None, limit: int | None, offset: int = 0,
           who: Decider | None = None) -> list[tuple[int, InboxItem]]:
    """The human steps waiting, the oldest ``limit``: read through the derived
    ``open_steps`` (the requests with no answer in a run that has not ended) — not every
    ``human.requested``, ``human.decided`` and workflow end of the journal at every poll
    (``test_84``)."""
    out = []
    for e in rt.journal.open_step_requests(run_id=run_id, limit=limit, offset=offset,
                                           decider=who)[0]:
        p = e.payload
        step = str(p["step"])
        question = str(p.get("question") or f"decide `{p.get('decision_field')}`")
        out.append((e.seq, InboxItem(
            kind="step", id=f"{e.run_id}/{step}", run_id=e.run_id,
            title=f"{p.get('workflow')}: {step}", asked_at=e.at.isoformat(),
            reasons=[str(r) for r in p.get("reasons", [])], step=step,
            question=cut(question, MAX_ITEM_QUESTION),
            answers=[str(a) for a in p.get("answers", [])],
            action={**step_input(e.run_id, p.get("context")),
                    "suggestion": p.get("suggestion")},
            command=f"cradle-kg step decide {e.run_id} {step} --as WHO --answer ...")))
    return out
