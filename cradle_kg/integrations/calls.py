"""One governed tool call from an agent framework: a proposal in, a readable result out.

An MCP ``tools/call`` or a LangGraph tool call carries a tool name and arguments the model
wrote; nothing else in it is trusted. :class:`GovernedSession` turns it into a
:class:`~cradle_kg.records.Proposal` whose identity is the session's (bound when the
session opened: ``--agent`` on stdio, the bearer token on HTTP), whose id is fresh and
deterministic within the session (``<session>:<step>``), whose target is derived from the
arguments by the tool's ``target_from``, and submits it through ``Runtime.submit`` — the
strict loader and its limits, both gates, the gateway, the journal.

What the *host application* (not the model) knows arrives through documented ``_meta``
keys, prefixed ``cradle-kg/`` (:data:`META_KEYS`); an unknown key in that namespace is
refused, never ignored.

:func:`render` turns an :class:`~cradle_kg.records.Outcome` into what a model can read:
the output when executed; otherwise the status, the reasons and the reason codes.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import (
    ApprovalError,
    CradleError,
    InputError,
    ToolUnavailableError,
    UnknownNameError,
)
from ..inputs import check_id, check_value
from ..lineage.inputs import checked_input
from ..loop.proposal import agent_run_id
from ..records import (
    ApprovalStatus,
    HumanApproval,
    IdempotencyClass,
    Outcome,
    OutcomeStatus,
    SideEffectClass,
)
from ..tools import ToolSpec, relayed_refusal

if TYPE_CHECKING:
    from ..loop.runtime import Runtime

META_PREFIX = "cradle-kg/"
#: the kind of input a host's `cradle-kg/input` key records (the user's request)
INPUT_KIND = "request"
#: the ``_meta`` keys a host may set on a call, and what each one does
META_KEYS: dict[str, str] = {
    "run": "the run the call belongs to (default: one run per session, "
           "`run:<agent id>/<session>`)",
    "task": "the task id of the proposal (default: the session's run)",
    "idempotency_key": "the host's key for this effect: the same key twice is one effect",
    "on_behalf_of": "the person or service the agent acts for (checked against the config)",
    "environment": "the environment to act in (default `local`; checked by gate 1)",
    "facts": "facts the host asserts: a list of {subject, predicate, object}",
    "evidence_refs": "evidence already stored in the home (sha256 refs)",
    "input": "the person's request, {text, author}: recorded once as the run's trusted input",
}


class HostFact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str
    predicate: str
    object: Any


class HostInput(BaseModel):
    """The person's request, as the host received it (lineage: a trusted origin)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    author: str


class HostMeta(BaseModel):
    """The ``cradle-kg/`` keys of a call's ``_meta``: set by the host, never by the model."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    run: str | None = None
    task: str | None = None
    idempotency_key: str | None = None
    on_behalf_of: str | None = None
    environment: str | None = None
    facts: tuple[HostFact, ...] = ()
    evidence_refs: tuple[str, ...] = ()
    input: HostInput | None = None


#: the host keys of a call that sets none (frozen: one shared instance)
NO_META = HostMeta()
#: the ``_meta`` keys lineage trusts as the host's word: only the host application asserts
#: them (on HTTP, with a host's token: ``cradle-kg api-token issue AGENT --host``)
HOST_ONLY_KEYS = ("facts", "input")


def check_host_only(meta: HostMeta) -> None:
    """Refuse what only the host may assert, from a caller that is not the host: an
    agent's own token on MCP's HTTP transport (``tests/security/test_68``). The facts are
    recorded as ``host:<session>`` and the input as the user's, both trusted origins for
    lineage — from the agent's token, the laundering ``test_59`` closed on the JSON API."""
    given = [k for k in HOST_ONLY_KEYS if getattr(meta, k) not in ((), None)]
    if given:
        raise InputError(
            f"`_meta`: `{META_PREFIX}{given[0]}` is the host application's word, and this "
            "token is the agent's", hint="the host's token for the agent: "
            "`cradle-kg api-token issue AGENT --host`")


def host_meta(meta: Mapping[str, Any] | None, runtime: Runtime) -> HostMeta:
    """The host's keys of a ``_meta`` object, checked; other namespaces are left alone."""
    picked = {k.removeprefix(META_PREFIX): v for k, v in (meta or {}).items()
              if isinstance(k, str) and k.startswith(META_PREFIX)}
    if not picked:  # the common call: no host keys, nothing to check
        return NO_META
    check_value(picked, limits=runtime.config.input_limits, where="_meta")
    try:
        return HostMeta.model_validate(picked)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise InputError(f"`_meta`: `{META_PREFIX}{loc}`: {first['msg'].lower()}",
                         hint="documented keys: " + ", ".join(
                             f"`{META_PREFIX}{k}`" for k in META_KEYS)) from None


def new_session_id(origin: str) -> str:
    """A fresh session id: the proposals of a session are ``<session>:<step>``."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return f"{origin}-{stamp}-{secrets.token_hex(4)}"


def derive_target(spec: ToolSpec, arguments: Mapping[str, Any]) -> str:
    """The target the arguments name (:meth:`cradle_kg.tools.ToolSpec.derive_target`, the
    one derivation every route uses). Gate 1 checks the result again (fail closed)."""
    return spec.derive_target(arguments)


def tool_hints(spec: ToolSpec) -> dict[str, bool]:
    """MCP tool annotations from the declared side-effect class (hints, not guarantees)."""
    cls = spec.side_effect_class
    return {
        "readOnlyHint": cls is SideEffectClass.READ_ONLY,
        "destructiveHint": cls in (SideEffectClass.COMPENSABLE, SideEffectClass.EXTERNAL_WRITE,
                                   SideEffectClass.IRREVERSIBLE),
        "idempotentHint": cls is SideEffectClass.READ_ONLY
        or spec.idempotency is IdempotencyClass.NATURAL,
        "openWorldHint": cls is SideEffectClass.EXTERNAL_WRITE,
    }


@dataclass(frozen=True)
class CallResult:
    """What a call ended as, in the shapes every framework needs."""

    status: str
    is_error: bool
    structured: dict[str, Any]
    text: str
    meta: dict[str, Any]
    outcome: Outcome | None = None

    @property
    def approval_id(self) -> str | None:
        approval = self.outcome.approval if self.outcome is not None else None
        return approval.id if approval is not None else None


@dataclass
class GovernedSession:
    """One agent's session: its identity, its run, its step counter."""

    runtime: Runtime
    agent_id: str
    session_id: str = ""
    origin: str = "mcp"
    home_hint: str = ""
    _step: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _inputs: set[tuple[str, str, str]] = field(default_factory=set, init=False, repr=False)
    #: runs found or claimed to be this agent's: a run's owner never changes, so each is
    #: asked of the journal once
    _own_runs: set[str] = field(default_factory=set, init=False, repr=False)
    #: runs whose highest step this session has read (:meth:`next_step`)
    _numbered: set[str] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.runtime.config.agent(self.agent_id) is None:
            raise UnknownNameError(f"`{self.agent_id}` is not an agent declared in "
                                   f"`{self.runtime.home.config}`")
        self.session_id = self.session_id or new_session_id(self.origin)

    @property
    def run_id(self) -> str:
        """The session's run, in its agent's namespace (``run:<agent id>/<session>``): no
        other agent can claim it first (``tests/security/test_235``)."""
        return agent_run_id(self.agent_id, self.session_id)

    def next_step(self, run_id: str | None = None) -> int:
        """Steps follow the order in which calls arrive; ``run_id``: the run the call
        proposes in.

        INVARIANT: a step is new in its run. A call that names no idempotency key is keyed
        by its run, step and arguments (``idem:…``), and a session's count began at 1: a
        session proposing into a run that already has steps — a client reconnected to its
        run (``cradle-kg/run``), a LangGraph thread's run continued by another process —
        took step 1 again, and the same arguments were the earlier call's replay, never
        run and reported ``executed`` (``tests/security/test_462``). The session's first
        call into a run counts on from the run's highest step (one query per run)."""
        if run_id is not None:
            self.count_in(run_id)
        with self._lock:
            self._step += 1
            return self._step

    def readable(self, *ids: str) -> bool:
        """Whether each of ``ids`` is an id the loader takes, so that the journal may be
        asked about it. INVARIANT: an id the proposal's loader refuses is never read: a NUL in
        `cradle-kg/run` reached PostgreSQL unchecked, and the call ended in a JSON-RPC
        error instead of its refusal (tests/security/test_14, on PostgreSQL). Its call is
        refused as before, nothing journaled."""
        try:
            for value in ids:
                check_id(value, limits=self.runtime.config.input_limits, where="id")
        except CradleError:
            return False
        return True

    def count_in(self, run_id: str) -> None:
        """Count this session's steps on from ``run_id``'s highest, once per run (the
        journal read outside any lock: :meth:`next_step` then reads nothing). Another
        agent's run is not read (its call is refused: its step says nothing of that run)."""
        from ..loop.runtime import run_owner

        if run_id in self._numbered or not self.readable(run_id):
            return  # (one the loader refuses: its call is refused, nothing read)
        journal = self.runtime.journal
        owner = run_owner(journal, run_id)
        highest = journal.max_step(run_id) if owner in (None, self.agent_id) else 0
        with self._lock:
            self._step = max(self._step, highest)
            self._numbered.add(run_id)

    def proposal(self, tool_id: str, arguments: Mapping[str, Any], meta: HostMeta, *,
                 step: int, proposal_id: str | None = None) -> dict[str, Any]:
        spec = self.runtime.tools.get(tool_id)
        action: dict[str, Any] = {"action_type": tool_id, "target": derive_target(
            spec, arguments), "arguments": dict(arguments)}
        for key in ("idempotency_key", "environment"):
            if getattr(meta, key) is not None:
                action[key] = getattr(meta, key)
        raw: dict[str, Any] = {
            "id": proposal_id or f"{self.session_id}:{step}",
            # the session's own task is its run: in the agent's namespace, no other agent
            # claims it first (a thread's `lg-1` was guessable: tests/security/test_392)
            "task_id": meta.task or self.run_id, "agent_id": self.agent_id,
            "run_id": meta.run or self.run_id, "step": step, "action": action}
        if meta.on_behalf_of is not None:
            raw["on_behalf_of"] = meta.on_behalf_of
        if meta.facts:
            raw["facts"] = [{**f.model_dump(mode="json"), "source": f"host:{self.session_id}"}
                            for f in meta.facts]
        if meta.evidence_refs:
            raw["evidence_refs"] = list(meta.evidence_refs)
        return raw

    def call(self, tool_id: str, arguments: Mapping[str, Any] | None,
             meta: HostMeta | None = None, *, step: int | None = None,
             proposal_id: str | None = None) -> CallResult:
        """Submit one call through both gates; a refused input is a result, never a raise."""
        meta = meta or NO_META
        step = self.next_step(meta.run or self.run_id) if step is None else step
        pid = proposal_id or f"{self.session_id}:{step}"
        where = {"run": meta.run or self.run_id, "proposal": pid, "step": step}
        if not isinstance(arguments, Mapping):
            return refused(InputError(f"arguments of `{tool_id}` must be a JSON object"),
                           where)
        try:
            raw = self.proposal(tool_id, arguments, meta, step=step, proposal_id=pid)
            # INVARIANT: nothing is journaled for a call the loader refuses or that names
            # another agent's run; the host's input only with a proposal that will be
            proposal = self.runtime.parse_proposal(raw)
            run_id = proposal.effective_run_id
            # a tool that cannot be reached now: refused before the host's input is
            # written too (submit refuses it before its own events: test_476)
            if (unavailable := self.runtime.unavailable_for(proposal)) is not None:
                raise unavailable
            # INVARIANT: another agent's task under a `task` limit is refused before the
            # host's input is written (tests/security/test_376)
            self.runtime.check_task(proposal, self.agent_id)
            if meta.input is not None:
                checked_input(self.runtime.config.input_limits, run_id, meta.input.text,
                              author=meta.input.author, kind=INPUT_KIND)
            if meta.input is not None:  # written into the run first: the run claimed first
                # INVARIANT: a new run is claimed, and the input written into it, only for a
                # proposal that will be written: with the agent's quotas full, the call is
                # decided first as it will be with the input (tests/security/test_255)
                if run_id not in self._own_runs:
                    self.runtime.room_for_input(proposal, meta.input.text,
                                                author=meta.input.author, kind=INPUT_KIND,
                                                claim_for=self.agent_id)
                self.check_run(run_id)
                self.record_input(run_id, meta.input)
            # the run checked first, claimed only for a proposal that will be written: one
            # refused past the agent's refusals quota claims nothing (tests/security/test_216)
            outcome = self.runtime.submit(
                proposal, claim_for=None if run_id in self._own_runs else self.agent_id,
                task_for=self.agent_id)
            with self._lock:
                self._own_runs.add(run_id)
        except CradleError as exc:  # refused before the loop (limits, shape): journals nothing
            return refused(exc, where)
        return render(outcome, tool_id, step=step, home=self.home_hint)

    def check_run(self, run_id: str) -> None:
        """Make ``run_id`` this agent's, or raise
        :class:`~cradle_kg.errors.RunOwnershipError` when it is another agent's
        (:meth:`cradle_kg.loop.runtime.Runtime.claim_run`)."""
        if run_id in self._own_runs:
            return
        self.runtime.claim_run(run_id, self.agent_id)
        with self._lock:
            self._own_runs.add(run_id)

    def record_input(self, run_id: str, given: HostInput | None) -> None:
        """The host's ``input`` key: journaled once per run and content."""
        if given is None:
            return
        seen = (run_id, given.author, given.text)
        with self._lock:
            if seen in self._inputs:
                return
            self._inputs.add(seen)
        self.runtime.record_input(run_id, given.text, author=given.author, kind=INPUT_KIND)

    def latest(self, result: CallResult, tool_id: str) -> CallResult:
        """The call's outcome as the journal has it now (an approval may have ended it)."""
        if result.outcome is None:
            return result
        # a call again under its key while the approval waited was answered with the
        # approval the key's first proposal asked for (tests/security/test_236): that
        # proposal is the one the approval lets go on, and its outcome the key's
        waited = result.outcome.approval
        pid = waited.proposal_id if waited is not None else result.outcome.proposal_id
        event = self.runtime.journal.latest_outcome(result.outcome.run_id, pid)
        if event is None:
            return result
        outcome = Outcome.model_validate(event.payload["outcome"])
        waits = outcome.approval if (outcome.status is OutcomeStatus.AWAITING_APPROVAL
                                     and outcome.approval is not None) else None
        state = self.runtime.approvals.get(waits.id) if waits is not None else None
        if state is not None and state.revoked is not None:
            # INVARIANT: a wait on an approval a person took back ends: nothing runs under
            # it, and the call again asks a person anew (tests/security/test_304) — before,
            # `mcp serve --approval-wait` kept the call waiting on it until its timeout
            by, why = state.revoked.by, state.revoked.reason
            return refused(ApprovalError(
                f"approval `{state.approval.id}` was revoked by `{by}`"
                + (f": {why}" if why else "") + "; nothing ran under it",
                hint="calling again asks a person anew"),
                {"run": outcome.run_id, "proposal": outcome.proposal_id,
                 "approval": state.approval.id})
        if state is not None and self._approved_here(state.approval):
            # approved by a process that cannot run the tool (an MCP proxy's upstream
            # tool, decided from the CLI or the web page): it goes on here, once
            resumed = self.runtime.resume_approval(state.approval, outcome.run_id)
            event = self.runtime.journal.latest_outcome(outcome.run_id, outcome.proposal_id)
            if event is not None:
                outcome = Outcome.model_validate(event.payload["outcome"])
            if (outcome.status is OutcomeStatus.AWAITING_APPROVAL and resumed is not None
                    and resumed.replayed and resumed.status is not OutcomeStatus.IN_PROGRESS):
                # INVARIANT: the key's action ran under another approval (another run asked
                # on its own): the call ends with the key's recorded outcome — before, each
                # poll of the wait resumed the run again, three events a poll
                # (tests/security/test_368). The resume records it as this proposal's too
                # when it closes the approval (test_378); a replay that closed none did not.
                # One still running (the approver's own process resumed the run as it
                # decided, and its tool has not answered yet) is no outcome: the call waits
                # on, and a later poll reads it (before, the wait ended `in_progress`: a CI
                # run of tests/integrations/test_mcp_stdio.py)
                outcome = resumed
        return render(outcome, tool_id, step=int(result.meta.get(META_PREFIX + "step", 0)),
                      home=self.home_hint)

    def _approved_here(self, approval: HumanApproval) -> bool:
        if approval.status is not ApprovalStatus.APPROVED:
            return False
        proposal = self.runtime.approvals.requested_proposal(approval)
        return self.runtime.tools.has(proposal.action.action_type)


def refused(exc: CradleError, where: Mapping[str, Any]) -> CallResult:
    """A call refused before anything was journaled. One that may be made again as it is
    (the tool cannot be reached now: :class:`~cradle_kg.errors.ToolUnavailableError`) says
    ``retryable`` and in how many seconds (``retry_after``); one whose tool changed since
    it was reviewed (:class:`~cradle_kg.errors.ToolChangedError`) says neither."""
    meta = {META_PREFIX + k: v for k, v in where.items()}
    meta[META_PREFIX + "status"] = "refused"
    retry = ({"retryable": True, "retry_after": exc.retry_after}
             if isinstance(exc, ToolUnavailableError) and exc.retryable else {})
    return CallResult(status="refused", is_error=True,
                      structured={"status": "refused", "reasons": [exc.message],
                                  "reason_codes": [exc.code], **retry, **(
                                      {"hint": exc.hint} if exc.hint else {})},
                      text=f"refused: {exc.message}" + (f" (hint: {exc.hint})"
                                                        if exc.hint else ""), meta=meta)


def render(outcome: Outcome, tool_id: str, *, step: int, home: str = "") -> CallResult:
    """An outcome as a model reads it: the output, or why not and what would help."""
    meta = {META_PREFIX + "run": outcome.run_id, META_PREFIX + "proposal": outcome.proposal_id,
            META_PREFIX + "step": step, META_PREFIX + "status": str(outcome.status),
            META_PREFIX + "replayed": outcome.replayed}
    if outcome.status is OutcomeStatus.EXECUTED:
        output = dict(outcome.observation.output) if outcome.observation else {}
        return CallResult(status="executed", is_error=False, structured=output,
                          text=json.dumps(output, ensure_ascii=False, sort_keys=True),
                          meta=meta, outcome=outcome)
    decision = outcome.decision
    body: dict[str, Any] = {
        "status": str(outcome.status), "tool": tool_id,
        "verdict": str(decision.verdict) if decision else None,
        "reasons": list(outcome.reasons), "reason_codes": list(decision.reason_codes)
        if decision else [],
        "missing_facts": list(decision.missing_facts) if decision else [],
        "required_actions": list(decision.required_actions) if decision else []}
    if outcome.observation is not None:  # the tool ran (its effect not confirmed): its answer
        body["output"] = dict(outcome.observation.output)
    refusal = outcome.observation.refusal if outcome.observation is not None else None
    if refusal is not None and any(r.startswith("escalated: ") for r in outcome.reasons):
        # INVARIANT: a refusal the runtime did not honour (the read found a write, or it
        # came on a retry after an attempt that raised: tests/security/test_560, test_593)
        # is an unknown outcome with a human task, never told "nothing was written"
        refusal = None
    if refusal is not None and outcome.status is OutcomeStatus.FAILED:
        # the tool's typed refusal (ToolRefused): what the agent acts on, and no human task
        # its message as gate 2 relays it: the call's secret values masked (test_573)
        body["refusal"] = {"code": refusal, "message": relayed_refusal(
            outcome.verification.checks if outcome.verification else ())}
    if outcome.status is OutcomeStatus.AWAITING_APPROVAL and outcome.approval is not None:
        body["approval_id"] = outcome.approval.id
        body["how_to_decide"] = approval_howto(outcome.approval.id, home)
        text = (f"awaiting_approval: approval `{outcome.approval.id}` is pending; nothing ran "
                f"yet. {body['how_to_decide']}")
    elif outcome.status is OutcomeStatus.VERIFICATION_FAILED:
        ran = [r for r in outcome.reasons if "compensat" in r]
        body["compensation"] = ran
        text = (f"verification_failed: the effect of `{tool_id}` was not confirmed: "
                + "; ".join(r for r in outcome.reasons if r not in ran)
                + ". compensation: " + ("; ".join(ran) if ran else "none declared or run"))
    elif "refusal" in body:
        text = (f"failed: `{tool_id}` refused the call (`{refusal}`): "
                f"{body['refusal']['message']}; nothing was written, and the same "
                "idempotency key answers the same")
    else:
        text = f"{outcome.status}: " + ("; ".join(outcome.reasons) or "no reason recorded")
        if body["reason_codes"]:
            text += " [codes: " + ", ".join(body["reason_codes"]) + "]"
        if body["missing_facts"]:
            text += " - missing facts: " + ", ".join(body["missing_facts"])
    return CallResult(status=str(outcome.status), is_error=True, structured=body, text=text,
                      meta=meta, outcome=outcome)


def approval_howto(approval_id: str, home: str = "") -> str:
    where = f" --home {home}" if home else ""
    return (f"an approver decides it on the web page (`cradle-kg serve{where}`, approvals "
            f"inbox) or with `cradle-kg approvals approve {approval_id} --as APPROVER{where}`; "
            f"call again with the same `{META_PREFIX}idempotency_key` to read the outcome")
