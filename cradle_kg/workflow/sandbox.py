"""The replay sandbox: a runtime in a scratch home whose activities are recorded.

In Temporal's terms the gates, decisions and transitions are workflow code (re-run),
while tool calls, verifier reads and model calls are activities (served from history).
:class:`SandboxRuntime` is an ordinary :class:`~cradle_kg.loop.runtime.Runtime` — packs
register through the same hooks — except that every tool and verifier it registers
is wrapped:

* **strict**: a tool returns its recorded observation and a verifier its recorded report;
  neither is ever called. Nothing recorded means the replay diverges.
* **live**: recorded when the same action was recorded; otherwise a tool runs only in
  dry-run (when it supports it) or when it is read-only, and anything else raises
  :class:`NotReplayable` (the gateway turns that into an observation error). A verifier
  without a recording answers ``inconclusive``: replay never claims what it did not read.

Every append goes through the sandbox's loop context (:class:`ReplayContext`), where
the replay driver flushes recorded context and compares what was produced.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from ..canonical import parse_iso
from ..config import RuntimeConfig
from ..errors import ToolRefused
from ..home import Home
from ..loop.context import Clock, LoopContext
from ..loop.gate1.findings import DomainValidator, Finding
from ..loop.runtime import Runtime
from ..records import (
    AuditEvent,
    FactCheck,
    Proposal,
    SideEffectClass,
    VerificationCheck,
    VerificationStatus,
)
from ..storage import Journal, Lease, NewEvent
from ..tools import (
    LookupFunction,
    ReadyFunction,
    ToolCall,
    ToolFunction,
    ToolSpec,
    refusal_message,
)
from ..verifiers import VerifierFunction, VerifierReport, VerifyRequest

_RAISED = re.compile(r"^tool `[^`]*` raised (?P<name>[A-Za-z_][A-Za-z0-9_]*): (?P<msg>.*)$",
                     re.DOTALL)


class NotReplayable(Exception):
    """A side effect with no recorded observation and no dry run: not called in replay."""


class AppendHook(Protocol):
    def before(self, events: Sequence[NewEvent]) -> Sequence[NewEvent]:
        """The events to append in place of ``events`` (as a recording wrote them)."""
        ...

    def after(self, written: Sequence[AuditEvent]) -> None: ...


@dataclass
class Recording:
    """What the recorded journal says each activity returned, by action id: the position
    of the event that says it in ``events``, read again when it is asked for (the
    payloads are not held: ``tests/security/test_526``)."""

    events: Sequence[AuditEvent] = ()
    observed: dict[str, int] = field(default_factory=dict)
    verified: dict[str, int] = field(default_factory=dict)
    #: where what a tool's lookup found of a key is, by action id
    looked: dict[str, int] = field(default_factory=dict)
    #: (proposal id, validator name) -> where its answers are, in journal order: the
    #: position of the decision, the answer's place in its ``validator_findings``
    validations: dict[tuple[str, str], deque[tuple[int, int]]] = field(default_factory=dict)

    @classmethod
    def of(cls, events: Sequence[AuditEvent]) -> Recording:
        rec = cls(events)
        for i, ev in enumerate(events):
            if ev.kind == "decision.made":
                for k, answer in enumerate(ev.payload.get("validator_findings", ())):
                    key = (str(ev.payload["proposal_id"]), str(answer["validator"]))
                    rec.validations.setdefault(key, deque()).append((i, k))
            elif ev.kind == "action.observed" and ev.payload.get("via") == "lookup":
                # what the lookup found of a call that raised (Execution._asked): the
                # lookup's answer; the call itself raised as its own observation says
                rec.looked[ev.subject] = i
                rec.observed.setdefault(ev.subject, i)
            elif ev.kind == "action.observed":
                rec.observed[ev.subject] = i
            elif ev.kind == "verification.recorded":
                rec.verified[str(ev.payload["action_id"])] = i
        return rec

    def observation(self, action_id: str) -> dict[str, Any] | None:
        at = self.observed.get(action_id)
        return None if at is None else dict(self.events[at].payload["observation"])

    def looked_up(self, action_id: str) -> dict[str, Any] | None:
        """What a tool's lookup found of ``action_id``'s key after its call raised (None:
        no lookup recorded)."""
        at = self.looked.get(action_id)
        return None if at is None else dict(
            self.events[at].payload["observation"].get("output") or {})

    def verification(self, action_id: str) -> dict[str, Any] | None:
        at = self.verified.get(action_id)
        return None if at is None else dict(self.events[at].payload)

    def validation(self, proposal_id: str, name: str) -> list[dict[str, Any]] | None:
        """The next recorded answer of validator ``name`` for ``proposal_id`` (None: no
        answer left)."""
        answers = self.validations.get((proposal_id, name))
        if not answers:
            return None
        at, k = answers.popleft()
        return list(self.events[at].payload["validator_findings"][k]["findings"])


def _action_id(call: ToolCall) -> str:
    return "act:" + call.idempotency_key.removeprefix("idem:")


class _ReplayLease:
    """The worker id journaled with intents is an input, like time: replay feeds it."""

    def __init__(self, real: Lease, worker: Callable[[], str | None]) -> None:
        self._real = real
        self._worker = worker

    @property
    def id(self) -> str:
        return self._worker() or self._real.id

    def held(self) -> bool:
        return self._real.held()

    def release(self) -> None:
        self._real.release()


class ReplayContext(LoopContext):
    """The loop's context in a sandbox: the replay driver watches every append."""

    #: the driver compares each append with the recording as it happens: nothing held back
    holds_appends = False

    def __init__(self, journal: Journal, *, config: RuntimeConfig, clock: Clock,
                 lease: Lease, hook: AppendHook | None) -> None:
        super().__init__(journal, config=config, clock=clock, lease=lease)
        self.hook = hook

    def append(self, events: Sequence[NewEvent], *, flush: bool = True) -> list[AuditEvent]:
        if self.hook is not None:
            events = self.hook.before(events)
        written = super().append(events, flush=flush)
        if self.hook is not None:
            self.hook.after(written)
        return written

    def append_recorded(self, events: Sequence[NewEvent]) -> list[AuditEvent]:
        """Append recorded events as they are (listeners still see them, the hook does not)."""
        return super().append(events)


class SandboxRuntime(Runtime):
    def __init__(self, home: Path, *, recording: Recording, strict: bool,
                 clock: Callable[[], datetime], hook: AppendHook | None = None,
                 worker: Callable[[], str | None] = lambda: None,
                 gateway_clock: Callable[[], datetime] | None = None) -> None:
        self._recording = recording
        self._strict = strict
        self._hook = hook
        # INVARIANT: a sandbox writes its own embedded journal, never the journal of record
        super().__init__(home, clock=clock, graph_sync=False, journal=Home(home).journal)
        self.context.lease = _ReplayLease(self.context.lease, worker)
        if gateway_clock is not None:
            # the gateway's "call started" reading is not journaled: replay feeds it apart
            self.gateway.clock = gateway_clock

    def _new_context(self, journal: Journal, *, config: RuntimeConfig, clock: Clock,
                     lease: Lease) -> LoopContext:
        self.replay_context = ReplayContext(journal, config=config, clock=clock, lease=lease,
                                            hook=self._hook)
        return self.replay_context

    def append_recorded(self, events: Sequence[NewEvent]) -> list[AuditEvent]:
        """Append recorded events as they are (listeners still see them)."""
        return self.replay_context.append_recorded(events)

    # --- recorded activities -------------------------------------------------------

    def register_tool(self, spec: ToolSpec, fn: ToolFunction, *,
                      lookup: LookupFunction | None = None,
                      ready: ReadyFunction | None = None) -> None:
        # ``ready`` is not kept: a replay reaches no tool, it serves what was recorded
        super().register_tool(spec, self._tool(spec, fn),
                              lookup=self._lookup() if lookup is not None else None)

    def register_verifier(self, verifier_id: str, fn: VerifierFunction) -> None:
        super().register_verifier(verifier_id, self._verifier(verifier_id))

    def register_validator(self, tool_pattern: str, fn: DomainValidator, *, name: str,
                           pack: str | None = None) -> None:
        """Strict replay serves a validator's recorded answer; live replay asks it again."""
        if not self._strict:
            super().register_validator(tool_pattern, fn, name=name, pack=pack)
            return

        def stand_in(proposal: Proposal, spec: ToolSpec) -> list[Finding]:
            answers = self._recording.validation(proposal.id, name)
            if answers is None:
                raise NotReplayable(f"no recorded answer of validator `{name}` for "
                                    f"`{proposal.id}`")
            return [Finding.from_json(f) for f in answers]

        super().register_validator(tool_pattern, stand_in, name=name, pack=pack)

    def _tool(self, spec: ToolSpec, fn: ToolFunction) -> ToolFunction:
        def stand_in(call: ToolCall) -> BaseModel | dict[str, Any]:
            recorded = self._recording.observation(_action_id(call))
            if recorded is not None:
                return _served(recorded)
            if not self._strict and spec.supports_dry_run:
                return fn(call.model_copy(update={"dry_run": True}))
            if not self._strict and spec.side_effect_class is SideEffectClass.READ_ONLY:
                return fn(call)
            raise NotReplayable(f"`{spec.ref}` has no recorded observation for "
                                f"`{_action_id(call)}` and is not called in replay")
        return stand_in

    def _lookup(self) -> LookupFunction:
        def stand_in(call: ToolCall) -> dict[str, Any] | None:
            found = self._recording.looked_up(_action_id(call))
            if found is not None:
                return found
            recorded = self._recording.observation(_action_id(call))
            return None if recorded is None or recorded.get("error") else recorded["output"]
        return stand_in

    def _verifier(self, verifier_id: str) -> VerifierFunction:
        def stand_in(req: VerifyRequest) -> VerifierReport:
            recorded = self._recording.verification(req.action.id)
            if recorded is not None:
                return _report(recorded, now=self.clock)
            if self._strict:
                raise NotReplayable(f"no recorded read of `{verifier_id}` for `{req.action.id}`")
            return VerifierReport(checks=(VerificationCheck(
                name="resource_exists", status=VerificationStatus.INCONCLUSIVE,
                detail="not verified in replay: no recorded read"),), read_at=self.clock(),
                evidence={}, source="replay")
        return stand_in


def _served(observation: dict[str, Any]) -> dict[str, Any]:
    """Give the gateway back what the tool gave it — or raise what the tool raised: a
    recorded refusal as the :class:`~cradle_kg.errors.ToolRefused` it was (its code, the
    tool's message), so the gateway journals the same refusal (tests/security/test_559)."""
    error = observation.get("error")
    refusal = observation.get("refusal")
    if isinstance(refusal, str) and refusal:
        raise ToolRefused(refusal, refusal_message(str(error or "")))
    if error and not observation.get("output"):
        match = _RAISED.match(str(error))
        if match:  # same exception name, same message: the same observation is journaled
            raise type(match["name"], (Exception,), {})(match["msg"])
        raise NotReplayable(str(error))
    return dict(observation.get("output") or {})


def _report(recorded: dict[str, Any], *, now: Callable[[], datetime]) -> VerifierReport:
    """The verifier's recorded answer (its raw report when the journal kept one)."""
    raw = recorded.get("verifier_report")
    if isinstance(raw, dict):
        return VerifierReport(
            checks=tuple(VerificationCheck.model_validate(c) for c in raw["checks"]),
            read_at=parse_iso(str(raw["read_at"])), evidence=dict(recorded.get("evidence", {})),
            source=str(raw.get("source", "")),
            changed=tuple(raw["changed"]) if raw.get("changed") is not None else None,
            facts=tuple(FactCheck.model_validate(f) for f in raw.get("facts", ())))
    # older journals: rebuild the report from the checks gate 2 recorded
    checks = recorded["verification"]["checks"]
    mine = tuple(VerificationCheck.model_validate(c) for c in checks
                 if c["name"] in ("resource_exists", "expected_state")
                 and c["detail"] != "the verifier did not check it")
    source = (recorded["verification"].get("provenance") or {}).get("source", "")
    return VerifierReport(checks=mine, read_at=now(), evidence=dict(recorded.get("evidence", {})),
                          source=str(source))
