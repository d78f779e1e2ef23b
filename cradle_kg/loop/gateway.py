"""The Tool Gateway — the only path to a side effect.

Intent before act: the intent event (with the idempotency key derived from run, step,
attempt and input hash) is committed durably *before* the tool is called, and the key
travels to the tool (a read-only call journals all of it in one commit, see
:func:`.execution.one_transaction`). The tool's answer becomes an
:class:`ExecutionObservation` — data, not truth — which is journaled before anything reads
it (committed, flushed to disk with the outcome's commit that follows).

The gateway is the only caller of a tool's side-effecting function and of its lookup.

Fencing: a worker may stall (a pause, a stopped process, a slow call) and lose its lease
meanwhile; another worker then reconciles its intent. So the gateway calls a tool only
while the worker's lease is held (checked after the intent is durable, just before the
call), and journals each observation with the seq of the event it follows about the
action (``if_last``: :meth:`.context.LoopContext.append_fenced`); either finding the
action taken over raises :class:`Superseded`, and the worker stops there.

Crash points (:mod:`cradle_kg.crashpoints`) mark where the harness may kill the process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from ..canonical import canonical_json, iso, sha256_bytes
from ..crashpoints import crashpoint
from ..records import Action, ExecutionObservation, ObservedSideEffect
from ..storage import IdempotencyKeyTaken, Lease, NewEvent, SubjectMoved
from ..tools import ToolCall, ToolRegistry, ToolSpec, refusal_error, refusal_of
from .context import Clock, LoopContext


@dataclass(frozen=True)
class GatewayResult:
    observation: ExecutionObservation
    output: BaseModel | None
    output_error: str | None
    started_at: datetime
    #: the tool raised (as opposed to answering with output that breaks its contract, or
    #: refusing: ``observation.refusal``): an unknown outcome
    raised: bool = False
    #: the seq of the observation's event (None: held in a one-transaction block), the
    #: fencing token of what is written next about the action
    last_seq: int | None = None
    #: ``observation.model_dump(mode="json")`` as its event journaled it (None: not made)
    observation_json: dict[str, Any] | None = None
    #: an attempt of the key before this call raised and no lookup cleared it (a retry of
    #: :class:`.execution.Execution`'s loop): a refusal of this call says that *it* wrote
    #: nothing, not the key — an unknown outcome (``tests/security/test_593``)
    after_raised: bool = False


class KeyAlreadyClaimed(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class Superseded(Exception):
    """This worker no longer holds the action: its lease was lost before the call (the
    tool was not called), or another worker wrote about the action since this one's last
    event (nothing of the refused append was written). ``result``: the call this worker
    made, if it made one, whose observation the journal did not take."""

    def __init__(self, action_id: str, why: str, *,
                 result: GatewayResult | None = None) -> None:
        super().__init__(why)
        self.action_id = action_id
        self.why = why
        self.result = result


def call_actor(action: Action) -> str | None:
    return action.provenance.actor if action.provenance else None


class Gateway:
    def __init__(self, tools: ToolRegistry, ctx: LoopContext, *, clock: Clock) -> None:
        self.tools = tools
        self.ctx = ctx
        #: the "call started" and "observed" readings (a replay feeds its own)
        self.clock = clock

    def execute(self, *, spec: ToolSpec, action: Action, call: ToolCall,
                before: Sequence[NewEvent], intent: NewEvent) -> GatewayResult:
        """Journal ``before`` + the intent (durably), call the tool, journal the observation.

        Raises :class:`KeyAlreadyClaimed` — having written nothing — when another
        submission already holds the intent for this key (or an approve-once it uses).
        """
        crashpoint("before_intent")
        lease = self.ctx.lease  # the one the intent names (it was built just now)
        try:
            written = self.ctx.append([*before, intent])
        except IdempotencyKeyTaken as taken:
            raise KeyAlreadyClaimed(taken.key) from taken
        crashpoint("after_intent")
        return self._call(spec, action, call, intent.run_id,
                          written[-1].seq if written else None, lease)

    def retry(self, *, spec: ToolSpec, action: Action, call: ToolCall,
              retry: NewEvent, after: int | None) -> GatewayResult:
        """Call the tool again under the intent already recorded, with the same key.

        The caller decides that the tool's idempotency class allows it; ``retry`` (an
        ``action.retry`` event) is journaled durably before the call, as an intent is —
        fenced by ``after``, the seq of the latest event about the action the caller read.
        """
        # INVARIANT: a retry never writes a second intent: the key was claimed once
        assert retry.kind == "action.retry" and retry.idem_key is None
        lease = self.ctx.lease  # the one the retry names
        try:
            written = self.ctx.append_fenced([retry], subject=action.id, last=after)
        except SubjectMoved as moved:
            raise Superseded(action.id, "another worker wrote about the action before "
                             "this retry: it was not made") from moved
        crashpoint("after_intent")
        return self._call(spec, action, call, retry.run_id,
                          written[-1].seq if written else None, lease)

    def reconcile(self, *, spec: ToolSpec, action: Action, call: ToolCall,
                  run_id: str, after: int) -> GatewayResult | None:
        """Ask the tool's lookup whether the effect of this key happened.

        When it did, the answer is journaled as a *reconciled* observation and returned;
        ``None`` means the remote system has no trace of the key. A lookup that raises
        propagates: the caller cannot know, and must not guess.
        """
        lookup = self.tools.lookup_for(spec.id)
        if lookup is None:
            raise LookupError(f"tool `{spec.ref}` has no lookup")
        started = self.clock()
        raw = lookup(call)
        if raw is None:
            return None
        return self._observe(spec, action, raw, None, run_id, started, after,
                             extra={"reconciled": True, "via": "lookup"})

    def _call(self, spec: ToolSpec, action: Action, call: ToolCall, run_id: str,
              after: int | None, lease: Lease | None = None) -> GatewayResult:
        # INVARIANT: no call once the lease the intent (or retry) was written under is lost
        # — another worker may be reconciling it (a stall between this check and the call
        # is the tool's key's to absorb). ``lease``: that lease; another thread of this
        # process may have renewed the worker's lease since, and then the intent is under
        # the lost one all the same (compared as objects: a replay feeds the ids)
        held = lease if lease is not None else self.ctx.lease
        if after is not None and (self.ctx.lease is not held or not held.held()):
            self.ctx.renew_lease(held)
            raise Superseded(action.id, f"this worker's lease `{held.id}` was lost before "
                             f"the call: `{spec.ref}` was not called")
        started = self.clock()
        raw: BaseModel | dict[str, object] | None = None
        error: str | None = None
        refusal: str | None = None
        try:
            fn = self.tools.implementation(spec.id)
            raw = fn(call)
        except Exception as exc:  # the tool failed: an observation, not a crash
            refused = refusal_of(exc)
            if refused is not None:
                # the tool's word that it wrote nothing (tests/security/test_557): final
                # for the key — not retried, no lookup, no human task (Settlement)
                refusal = refused[0]
                error = refusal_error(spec.ref, *refused)
            else:  # INVARIANT: any other exception is an unknown outcome
                error = f"tool `{spec.ref}` raised {type(exc).__name__}: {exc}"
        crashpoint("after_call")
        return self._observe(spec, action, raw, error, run_id, started, after,
                             refusal=refusal)

    def _observe(self, spec: ToolSpec, action: Action, raw: BaseModel | dict[str, object] | None,
                 error: str | None, run_id: str, started: datetime, after: int | None, *,
                 extra: dict[str, object] | None = None,
                 refusal: str | None = None) -> GatewayResult:
        output: BaseModel | None = None
        output_error: str | None = None
        if raw is not None:
            try:
                output = spec.parse_output(raw)
            except (ValidationError, TypeError, ValueError) as exc:
                output_error = f"output of `{spec.ref}` breaks its contract: {exc}"
        elif error is None:
            output_error = f"tool `{spec.ref}` returned nothing"
        observation = self._observation(spec, action, output, raw, error or output_error,
                                        refusal)
        observed = observation.model_dump(mode="json")
        # committed before anything reads it, not flushed on its own: the outcome's commit,
        # next, flushes it (the log is written in order). A process that dies keeps it; a
        # power loss in between may drop it, and recovery then asks as after a crash in
        # the call (lookup, retry under the same key, or a human task): never a guess
        event = NewEvent(
            run_id=run_id, kind="action.observed", subject=action.id,
            actor=f"tool:{spec.ref}", at=observation.observed_at,
            payload={"observation": observed,
                     # what the graph needs to mark the action executed, by whom and when
                     "executed_at": iso(action.executed_at or started),
                     "executed_by": action.executed_by or call_actor(action),
                     **(extra or {})})
        result = GatewayResult(observation, output, observation.error, started,
                               raised=error is not None and refusal is None,
                               observation_json=observed)
        try:
            written = self.ctx.append_fenced([event], subject=action.id, last=after,
                                             flush=False)
        except SubjectMoved as moved:
            raise Superseded(action.id, "another worker wrote about the action since this "
                             "one's last event about it: this observation of "
                             f"`{spec.ref}` was not journaled", result=result) from moved
        return replace(result, last_seq=written[-1].seq if written else None)

    def _observation(self, spec: ToolSpec, action: Action, output: BaseModel | None,
                     raw: object, error: str | None,
                     refusal: str | None = None) -> ExecutionObservation:
        data = output.model_dump(mode="json") if output is not None else (
            raw if isinstance(raw, dict) else {})
        try:
            text = canonical_json(data).encode("utf-8")
        except ValueError as exc:  # NaN, a lone surrogate: no journal can hold the output
            # INVARIANT: the effect happened — its observation is journaled, never an
            # exception after the call (tests/security/test_98, as test_28)
            error = error or (f"output of `{spec.ref}` cannot be journaled: "
                              f"{type(exc).__name__}: {str(exc)[:200]}")
            data, text = {}, b"{}"
        out_hash = sha256_bytes(text)
        limit = self.ctx.config.input_limits.max_output_bytes
        if len(text) > limit:  # the effect happened; its answer is not the journal's to hold
            data = {}
            error = error or (f"output of `{spec.ref}` is {len(text)} bytes, more than the "
                              f"limit of {limit} (`input_limits.max_output_bytes`): not "
                              f"journaled, its hash is `{out_hash}`")
        side_effects, effects_error = _side_effects(spec, data)
        error = error or effects_error
        return ExecutionObservation(
            id="obs:" + action.id.removeprefix("act:"),
            execution_id=action.id,
            tool_id=spec.id,
            raw_result_ref=out_hash,
            observed_at=self.clock(),
            side_effects=side_effects,
            output=data if isinstance(data, dict) else {},
            output_hash=out_hash,
            reported_ok=error is None and bool(data.get("ok", True)),
            error=error,
            refusal=refusal,
        )


def _side_effects(spec: ToolSpec, data: dict[str, Any]
                  ) -> tuple[tuple[ObservedSideEffect, ...], str | None]:
    """The side effects a tool's output reports, or why they cannot be read. The output is
    the tool's (an upstream MCP server's) word: an entry that is not a side effect is an
    error of the observation — never an exception after the effect, never skipped (an
    effect the blast-radius check did not see)."""
    effects = data.get("side_effects", [])
    problem = f"output of `{spec.ref}` breaks its contract: `side_effects` "
    if not isinstance(effects, list):
        return (), problem + "is not a list"
    out: list[ObservedSideEffect] = []
    for i, effect in enumerate(effects):
        try:
            out.append(ObservedSideEffect.model_validate(effect))
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(x) for x in (i, *first["loc"]))
            return (), problem + f"[{where}]: {first['msg'].lower()}"
    return tuple(out), None
