"""``cradle-kg mcp proxy``: an existing MCP server's tools, governed by the runtime.

The proxy opens the upstream — a command on stdio, spoken to by a JSON-RPC client of our
own whose lines are read capped and strict (:mod:`.upstream_stdio`), or a streamable-HTTP
URL, through the official MCP client, its answers read capped (:mod:`.upstream_http`) —
lists its tools, and
registers each one *declared* in the operator's contracts file (:mod:`.contracts`) in the
runtime through ``Runtime.register_tool``, under a prefix. The registered function is the
only code that calls the upstream, and only the gateway holds it: a call reaches the
upstream after gate 1, with its intent (and its idempotency key) journaled first (a
``read_only`` contract: in the one transaction of a read,
:func:`cradle_kg.loop.execution.one_transaction`). The key travels to the upstream — as
the argument the contract names, and always in ``_meta`` (``cradle-kg/idempotency_key``) —
so a keyed upstream can deduplicate. Gate 2 reads the effect back through the declared
upstream read tool; the same read is the tool's lookup, so crash recovery asks the
upstream whether a key's effect happened before it calls again. Undeclared tools are not
served, or — with ``allow_undeclared_read``, and only those the upstream annotates
``readOnlyHint`` (and not ``destructiveHint``) — served as ``read_only``.

What the agent reads of an upstream tool is the operator's word or nothing of the
upstream's (:mod:`.upstream_pins`): an upstream's description and its input schema's
prose are text the runtime never journals, so lineage could not trace a value planted
there ("tool poisoning": an IBAN in a description had no origin, and the transfer to it
executed unattended, ``tests/security/test_127``). The agent is shown the contract's
``description`` — or the upstream's own description and input schema when the contract
*pins* them: ``pin`` is the hash of the upstream tool's definition the operator reviewed,
and an upstream whose definition differs from its pin stops the proxy at start ("rug
pull", ``test_128``). Unpinned, the input schema is shown as its grammar alone, whose own
words are plain words only (an ``enum`` of an IBAN is not shown, a property named after
one is not served, ``test_137``), and the description is the contract's or a neutral line.
A served tool whose definition changes while the proxy runs (the upstream's
``notifications/tools/list_changed``, then a new listing) is refused from then on, before
anything of a call is journaled (not retryable: ``tests/security/test_614``); the change
itself is logged and journaled once (``tools.changed``, in :data:`TOOLS_RUN`).

What gate 2's read proves is the upstream's word about its own state: ``verify.identity``
catches an answer about another record, or none (``tests/security/test_475``), but an
upstream that echoes the asked id while it reads another record is not told apart from an
honest one by anything a contract declares — verify through a system the upstream does
not control where it matters.

The tools are then served exactly as ``mcp serve`` serves native ones
(:func:`.mcp_server.build_server`): one code path, the same journal, approvals and replay.
"""

from __future__ import annotations

import contextlib
import json
import logging
import string
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, model_validator

from ..canonical import canonical_json
from ..errors import InputError, ToolChangedError, ToolError, ToolRefused, ToolUnavailableError
from ..inputs import CEILINGS, check_value, load_json
from ..records import (
    RUNTIME_ACTOR,
    IdempotencyClass,
    SideEffectClass,
    VerificationCheck,
    VerificationStatus,
)
from ..storage import NewEvent
from ..tools import ToolCall, ToolSpec
from . import require
from .calls import META_PREFIX
from .contracts import Contracts, ToolContract, is_tool_name
from .schema_defaults import Unplaceable, schema_defaults
from .upstream_pins import (
    PIN_HINT,
    REPIN_HINT,
    changed_message,
    definition_of,
    grammar_of,
    pin_of,
    plain,
    planted,
    shown_number,
    shown_values,
)

if TYPE_CHECKING:
    from mcp import ClientSession, types

    from ..inputs import InputLimits
    from ..loop.runtime import Runtime
    from ..verifiers import VerifierReport, VerifyRequest


logger = logging.getLogger(__name__)

#: the code of the proxy's refusal of a call its upstream provably never received
#: (:class:`~cradle_kg.errors.ToolRefused`; ``tests/security/test_591``)
NOT_REACHED = "upstream_not_reached"
#: seconds an upstream call may take; past it the call raised — its outcome unknown: the
#: tool's lookup asks the upstream before the call is settled (``tests/security/test_532``),
#: and an HTTP upstream is taken as down until it is reached again (``test_533``)
UPSTREAM_TIMEOUT = 60.0


class UpstreamOutput(BaseModel):
    """What an upstream tool answered: its structured content, or ``{"text": ...}``."""

    model_config = ConfigDict(frozen=True, extra="allow")


def input_model(name: str, schema: Mapping[str, Any],
                shown: Mapping[str, Any] | None = None) -> type[BaseModel]:
    """A model for an upstream tool's arguments: checked against its JSON Schema, and
    described by ``shown`` (what MCP clients see; the upstream's own ``inputSchema`` when
    not given). Shown less than the whole schema, an argument that breaks it is told which
    keyword it broke, never the schema's own text (:func:`said_of`)."""
    from ..json_schema import errors

    frozen_schema = json.loads(json.dumps(dict(schema)))
    checker = upstream_validator(name, "input", frozen_schema)
    frozen_shown = json.loads(json.dumps(dict(shown))) if shown is not None else frozen_schema
    try:
        declared = schema_defaults(frozen_schema)
    except (ValueError, RecursionError) as exc:  # Unplaceable; a NaN default
        said = str(exc) if isinstance(exc, Unplaceable) else "its defaults cannot be read"
        raise InputError(f"the upstream's `{name}` declares an input schema the proxy "
                         f"refuses: {said}", hint="declare each argument's default under "
                         "`properties` (or `allOf`, `$ref`)") from None

    class UpstreamArguments(BaseModel):
        model_config = ConfigDict(frozen=True, extra="allow")
        #: what the upstream fills in for an argument left out (its schema's ``default``s,
        #: through ``allOf`` and ``$ref`` too): Cedar is asked about them
        #: (``tools.filled_in``, ``test_382``, ``test_400``)
        upstream_defaults: ClassVar[dict[str, Any]] = declared.known
        #: the arguments whose default the schema leaves unsure (under ``anyOf``, …): a
        #: call must write them (``test_400``)
        upstream_unknown: ClassVar[dict[str, str]] = declared.unknown

        @model_validator(mode="before")
        @classmethod
        def _schema(cls, data: Any) -> Any:
            error = next(iter(sorted(errors(checker, data), key=lambda e: e.path)), None)
            if error is not None:
                where = ".".join(str(p) for p in error.path) or "arguments"
                raise ValueError(f"{where}: {said_of(error, whole=shown is None)[:200]}")
            left = sorted(n for n in cls.upstream_unknown if n not in data) \
                if isinstance(data, dict) else []
            if left:
                raise ValueError(f"{left[0][:80]}: write it: the upstream's schema gives it a "
                                 "default the proxy cannot read for sure, so what the upstream "
                                 "would fill in is unknown")
            return data

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return dict(frozen_shown)

    UpstreamArguments.__name__ = UpstreamArguments.__qualname__ = f"Args_{name}"
    return UpstreamArguments


#: the keywords whose error message quotes the agent's value and a bound or a name the
#: grammar shows (``'x' is too long``, ``'id' is a required property``), nothing else of the
#: schema: an ``enum``'s message lists its values, a ``pattern``'s its regex, a ``not``'s
#: its whole subschema (descriptions included)
_SAYS_NO_SCHEMA = frozenset({
    "type", "required", "maxLength", "minLength", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems", "minProperties",
    "maxProperties", "dependentRequired"})


def said_of(error: Any, *, whole: bool) -> str:
    """What the agent is told of an argument that breaks the upstream's schema: the
    validator's message when the agent is shown the whole schema (a pinned tool), or when
    the message quotes nothing of the schema the grammar does not show; else the keyword.
    An unpinned tool's ``enum`` or ``not`` refused a call with the upstream's values and
    prose (``tests/security/test_137``), and a bound (``less than the minimum of
    4155550123``) the upstream's number (``test_145``)."""
    if whole or (error.validator in _SAYS_NO_SCHEMA and shown_number(error.validator_value)):
        return str(error.message)
    if error.validator in ("enum", "const") and shown_values(error.validator,
                                                             error.validator_value):
        return str(error.message)  # values the grammar shows
    return f"does not satisfy the tool's `{error.validator}`"


#: what an upstream's text answer is read within when it is JSON: the strict loader's rules
#: (no key twice, no ``NaN``, no lone surrogate) at the widths a record holds — an answer's
#: size is bounded by the line cap before it gets here, and by ``max_output_bytes`` after
ANSWER_LIMITS = CEILINGS.model_copy(update={"max_bytes": 1 << 31,
                                             "max_string_length": 1 << 31})


def answer(result: types.CallToolResult) -> dict[str, Any]:
    """An upstream result as a mapping: structured content, else the text — a JSON object
    when the text is one, read by the strict loader.

    The text is the upstream's word inside a message the strict reader let through as a
    string: ``json.loads`` read a key given twice last-wins (``{"ok": false, "ok": true}``
    reported ok), ``NaN`` (journaled as ``null``) and ``"\\ud800"``, a lone surrogate no
    journal can hold — ``submit`` raised ``UnicodeEncodeError`` after the upstream's effect,
    its intent journaled and no outcome (``tests/security/test_98``). JSON the strict
    loader refuses is a :class:`ToolError` (the call fails, gate 2 reads the state); text
    that is no JSON at all is ``{"text": ...}``, as before. Structured content, which the
    SDK parsed, is held to the same rules (``NaN``, numbers, surrogates, depth)."""
    if result.structuredContent is not None:
        # parsed by the SDK (a key given twice is lost there), checked by the same rules
        try:
            check_value(result.structuredContent, limits=ANSWER_LIMITS,
                        where="the upstream's answer")
        except InputError as exc:
            raise ToolError(f"the upstream answered JSON the runtime refuses: {exc.message}",
                            hint="an answer is read with the strict loader's rules") from None
        return dict(result.structuredContent)
    text = "".join(getattr(c, "text", "") for c in result.content)
    try:
        parsed = load_json(text, limits=ANSWER_LIMITS, source="the upstream's answer")
    except InputError as exc:
        try:
            json.loads(text)
        except RecursionError:
            pass  # JSON nested past any limit: refused below
        except ValueError:
            return {"text": text}  # not JSON: the text itself
        raise ToolError(f"the upstream answered JSON the runtime refuses: {exc.message}",
                        hint="an answer is read with the strict loader's rules") from None
    return dict(parsed) if isinstance(parsed, dict) else {"text": text}


def _fill(templates: Mapping[str, str], values: Mapping[str, Any]) -> dict[str, str]:
    flat = {k: v for k, v in values.items() if isinstance(v, str | int | float)
            and not isinstance(v, bool)}
    return {k: t.format_map(flat) for k, t in templates.items()}


def _same(value: Any, text: str) -> bool:
    """Whether a field of a read's answer holds ``text`` (a template filled from the
    call's arguments): a string equal to it, or a number (not a boolean) whose text it is.
    A missing field, ``null``, a boolean, an object or a list holds nothing: as text they
    read ``"None"``, ``"True"``, a ``repr`` (tests/security/test_485)."""
    if isinstance(value, str):
        return value == text
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and str(value) == text


def _differing(got: Mapping[str, Any], expected: Mapping[str, str]) -> list[str]:
    """What of ``expected`` (field -> text) the answer ``got`` does not hold (:func:`_same`),
    each said in one line."""
    return [f"`{k}` is `{str(got.get(k))[:80]}`, expected `{v[:80]}`"
            for k, v in expected.items() if not _same(got.get(k), v)]


def output_checkers(tools: list[types.Tool]) -> dict[str, Any]:
    """A validator per upstream tool that declares an ``outputSchema``, built once (its
    schema checked here, at start — the metaschema, its patterns, a loop: a bad one
    refuses the proxy, :mod:`cradle_kg.json_schema`)."""
    return {tool.name: upstream_validator(tool.name, "output",
                                          json.loads(json.dumps(tool.outputSchema)))
            for tool in tools if tool.outputSchema is not None}


def upstream_validator(name: str, which: str, schema: dict[str, Any]) -> Any:
    """A compiled validator of the ``which`` (input / output) schema the upstream's tool
    ``name`` declares, checked at start: against the 2020-12 metaschema (an invalid one —
    ``"required": "q"``, ``"minLength": "x"`` — would check nothing, or fail every call
    with a ``TypeError``), then for bounded work (:mod:`cradle_kg.json_schema`). Either
    refuses the proxy in one line naming the tool."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

    from ..json_schema import validator

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise InputError(f"the upstream's `{name}` declares an invalid {which} "
                         f"schema: {exc.message[:200]}") from None
    except RecursionError:
        raise InputError(f"the upstream's `{name}` declares an {which} schema the proxy "
                         "refuses: it nests too deep") from None
    try:
        return validator(schema)
    except (InputError, RecursionError) as exc:
        said = exc.message if isinstance(exc, InputError) else "it nests too deep"
        raise InputError(f"the upstream's `{name}` declares an "
                         f"{which} schema the proxy refuses: {said}") from None


@runtime_checkable
class Channel(Protocol):
    """How :class:`Upstream` speaks to its upstream, from the runtime's worker threads:
    the stdio client (:class:`.upstream_stdio.StdioClient`, which needs no event loop) or
    the SDK's session over streamable HTTP (:class:`SessionChannel`)."""

    def tool_call(self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None,
                  timeout: float) -> types.CallToolResult: ...

    def tools_page(self, cursor: str | None, timeout: float) -> types.ListToolsResult: ...

    def settle(self) -> None:
        """Handle what the upstream has sent and nobody has read yet (a notice that its
        tool list changed, written between two calls)."""


#: the code of the SDK's error for a request not answered within its read timeout
_TIMED_OUT = 408


@dataclass
class SessionChannel:
    """An SDK ``ClientSession`` as a :class:`Channel`: each request is run on the
    session's event loop — the proxy's (the caller is a worker thread that loop started),
    or, for a session opened again after the upstream was lost, its own ``portal``'s."""

    session: ClientSession
    #: set when a request found the upstream unreachable or the session gone
    #: (:func:`.upstream_http.session_lost`): :meth:`Upstream.unavailable` then refuses
    #: calls and opens a new session in the background
    lost: threading.Event = field(default_factory=threading.Event)
    #: the event loop of a session opened again (:func:`_reached_again`), and what closes it
    portal: Any = None
    closer: contextlib.ExitStack | None = None
    #: the idempotency keys of the calls whose request the transport could not send (its
    #: connection refused: :data:`.upstream_http.NOT_SENT`), each taken by its own call
    unsent: set[str] = field(default_factory=set)

    def alive(self) -> bool:
        return not self.lost.is_set()

    def stop(self) -> None:
        """Close a session opened again (the proxy's own is closed with the proxy)."""
        if self.closer is not None:
            self.closer.close()

    def _run(self, call: Callable[[], Any]) -> Any:
        from mcp.shared.exceptions import McpError

        try:
            if self.portal is not None:
                return self.portal.call(call)
            import anyio.from_thread

            return anyio.from_thread.run(call)
        except McpError as exc:
            # INVARIANT: a request the upstream did not answer in time finds it down, as a
            # refused connection does (tests/security/test_533; the transport's own
            # deadline says so too, :class:`.upstream_http.CappedTransport`)
            if exc.error.code == _TIMED_OUT:
                self.lost.set()
            raise

    def settle(self) -> None:
        """Nothing: the session's receive loop reads the upstream as it writes."""

    def tool_call(self, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None,
                  timeout: float) -> types.CallToolResult:
        from mcp import types
        from mcp.shared.exceptions import McpError

        from .upstream_stdio import not_sent

        request = types.ClientRequest(types.CallToolRequest(params=types.CallToolRequestParams(
            name=name, arguments=arguments,
            _meta=types.RequestParams.Meta(**meta) if meta else None)))
        key = (meta or {}).get(META_PREFIX + "idempotency_key")
        try:
            result: types.CallToolResult = self._run(partial(
                self.session.send_request, request, types.CallToolResult,
                request_read_timeout_seconds=timedelta(seconds=timeout)))
        except McpError as exc:
            # INVARIANT: the call's request never left the proxy only when the transport
            # said so of it, by its key — never by what an answer says (an upstream can
            # answer any error code and text: tests/security/test_592)
            if isinstance(key, str) and key in self.unsent:
                self.unsent.discard(key)
                raise not_sent(exc) from None
            raise
        finally:
            if isinstance(key, str):
                self.unsent.discard(key)
        return result

    def tools_page(self, cursor: str | None, timeout: float) -> types.ListToolsResult:
        from mcp import types

        request = types.ClientRequest(types.ListToolsRequest(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor is not None
            else None))
        result: types.ListToolsResult = self._run(partial(
            self.session.send_request, request, types.ListToolsResult,
            request_read_timeout_seconds=timedelta(seconds=timeout)))
        return result


@dataclass
class Upstream:
    """The one connection to the upstream (a :class:`Channel`, or an SDK ``ClientSession``
    run on its event loop); calls come from the runtime's worker threads (the gateway's,
    the verifier's)."""

    session: Channel | ClientSession
    source: str
    #: the upstream tools' output schemas, compiled once (:func:`output_checkers`)
    checkers: Mapping[str, Any] = field(default_factory=dict)
    #: each listed tool's pin as listed at start: what is served, and shown
    pins: dict[str, str] = field(default_factory=dict)
    #: the tools whose definition changed since start: refused until the proxy restarts
    changed: dict[str, str] = field(default_factory=dict)
    #: told of each change once, when it is first seen: (tool, pin served, pin listed now —
    #: None: no longer listed); :func:`register` journals it (``tools.changed``)
    on_change: Callable[[str, str, str | None], None] | None = None
    _changes: threading.Lock = field(default_factory=threading.Lock, init=False)
    #: the upstream said its tool list changed (``notifications/tools/list_changed``): the
    #: next call lists the tools again before it calls
    stale: threading.Event = field(default_factory=threading.Event)
    _relist: threading.Lock = field(default_factory=threading.Lock)
    #: how to start the upstream again, initialized (a stdio upstream's command), or to
    #: reach it again (an HTTP upstream: a new session): None — one given in process — is
    #: never restarted
    restart: Callable[[], Channel] | None = None
    channel: Channel = field(init=False)
    #: the restart under way since the upstream was found gone (None: it is up)
    _restarter: threading.Thread | None = field(default=None, init=False)
    _restart_lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _attempts: int = field(default=0, init=False)
    _next_attempt: float = field(default=0.0, init=False)
    _stopping: threading.Event = field(default_factory=threading.Event, init=False)
    #: the channels started again here (stopped by :meth:`close`)
    _started: list[Channel] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        given = self.session
        self.channel = given if isinstance(given, Channel) else SessionChannel(given)

    def unavailable(self) -> ToolUnavailableError | None:
        """Why no call can reach the upstream now, or None. A stdio upstream that is gone
        (killed, crashed, left) is started again in the background — at once, then after
        :data:`RESTART_FIRST` seconds, doubling to :data:`RESTART_MAX` — and until it is
        back, listed and its tools' pins compared, every call is refused *before* anything
        is journaled, retryable: it served on, and each call wrote its intent, failed
        ``Connection closed`` and opened a human task — one per call of one outage
        (``tests/security/test_476``). A call in flight when it died is reconciled as
        before (its key's next call answers its outcome, never a second call). An HTTP
        upstream is so once a request found it unreachable or its session gone
        (:attr:`SessionChannel.lost`): a new session is opened in the background, the same
        way (``test_489``, ``test_491``)."""
        if self.restart is None:
            return None
        reached = isinstance(self.channel, SessionChannel)
        with self._restart_lock:
            if self._restarter is None:
                alive = getattr(self.channel, "alive", None)
                if alive is None or alive():
                    return None
                logger.warning("the upstream `%s` is gone: %s", self.source,
                               "reaching it again" if reached else "starting it again")
                self._attempts, self._next_attempt = 0, time.monotonic()
                self._restarter = threading.Thread(target=self._restart_loop, daemon=True,
                                                   name="upstream-restart")
                self._restarter.start()
            wait = max(1.0, round(self._next_attempt - time.monotonic(), 1))
            attempt = max(1, self._attempts)
        said = ("cannot be reached: the proxy is trying it again" if reached
                else "is not running: the proxy is starting it again")
        return ToolUnavailableError(
            f"the upstream `{self.source}` {said} (attempt {attempt}); nothing of this call "
            "was journaled", retry_after=wait,
            hint=f"make the same call again in {wait:g} s or later")

    def _restart_loop(self) -> None:
        """Start the upstream again until it is up (or the proxy stops), backing off."""
        assert self.restart is not None
        delay = RESTART_FIRST
        while not self._stopping.is_set():
            with self._restart_lock:
                self._attempts += 1
            channel: Channel | None = None
            try:
                channel = self.restart()
                self._compare(listed_tools(channel))
            except Exception as exc:  # logged; the next attempt may do
                logger.warning("the upstream `%s` could not be started again: %s",
                               self.source, exc)
                if channel is not None:
                    _stop(channel)
                with self._restart_lock:
                    self._next_attempt = time.monotonic() + delay
                if self._stopping.wait(delay):
                    return
                delay = min(2 * delay, RESTART_MAX)
                continue
            if self._stopping.is_set():
                _stop(channel)
                return
            self._started.append(channel)
            with self._restart_lock:
                old, self.channel = self.channel, channel
                self._restarter = None
            logger.warning("the upstream `%s` is running again", self.source)
            _stop(old)
            if old in self._started:
                self._started.remove(old)  # one started again before: stopped now
            return

    def close(self) -> None:
        """Stop restarting, and stop the upstreams started again (the proxy leaves)."""
        self._stopping.set()
        restarter = self._restarter
        if restarter is not None:
            restarter.join(UPSTREAM_TIMEOUT)
        for channel in self._started:
            _stop(channel)

    def _compare(self, listed: list[types.Tool]) -> None:
        """Mark the tools whose definition differs from the one served (refused from now),
        and tell each change once — logged, and to :attr:`on_change` — never once per call
        refused for it."""
        now = {t.name: pin_of(t) for t in listed}
        new: list[tuple[str, str, str | None]] = []
        with self._changes:
            for tool, pin in self.pins.items():
                if now.get(tool) != pin and tool not in self.changed:
                    self.changed[tool] = changed_message(tool, pin, now.get(tool))
                    new.append((tool, pin, now.get(tool)))
        for tool, pin, listed_now in new:
            logger.warning("%s: refused from now on", self.changed[tool])
            if self.on_change is not None:
                try:
                    self.on_change(tool, pin, listed_now)
                except Exception as exc:  # the refusal holds: only the record is missing
                    logger.error("the change of the upstream's `%s` could not be journaled: "
                                 "%s", tool, exc)

    def ready(self, name: str) -> ToolUnavailableError | None:
        """Why a call of ``name`` is refused before anything of it is journaled, or None:
        the upstream cannot be reached now (:meth:`unavailable`, retryable), or ``name``'s
        definition changed since start — listed again first when the upstream said its
        tools changed — (:class:`ToolChangedError`, not retryable): such a call passed
        gate 1, journaled its intent, failed in the tool and opened a human task, one per
        call (``tests/security/test_614``). A listing that fails here leaves the decision
        to the call (:meth:`check`, as before)."""
        gone = self.unavailable()
        if gone is not None:
            return gone
        try:
            self._relisted()
        except Exception as exc:  # the call's own check lists again, or fails
            logger.warning("the upstream `%s` could not be listed again: %s", self.source,
                           exc)
        return self._refusal(name)

    def _refusal(self, name: str) -> ToolChangedError | None:
        said = self.changed.get(name)
        return None if said is None else ToolChangedError(
            said + "; nothing of this call was journaled", retry_after=0.0,
            hint=REPIN_HINT + "; then restart the proxy")

    def _relisted(self) -> None:
        """Read what the upstream sent, and list its tools again (comparing their pins)
        when it said they changed."""
        self.channel.settle()
        if self.stale.is_set():
            with self._relist:
                if self.stale.is_set():
                    self.stale.clear()  # before listing: a notice during it lists again
                    try:
                        listed = listed_tools(self.channel)
                    except BaseException:
                        self.stale.set()  # not listed: the next call tries again
                        raise
                    self._compare(listed)

    def check(self, name: str) -> None:
        """Refuse ``name`` when its definition changed since start (listing the tools again
        first when the upstream said they changed): a call already past :meth:`ready`
        when the change is seen."""
        self._relisted()
        if name in self.changed:
            raise ToolError(self.changed[name], hint=REPIN_HINT + "; then restart the proxy")

    def call(self, name: str, arguments: Mapping[str, Any], *,
             key: str | None = None) -> types.CallToolResult:
        """One ``tools/call``; a result that breaks the tool's declared output schema
        raises, as the SDK's ``call_tool`` would — checked with the validator compiled at
        start, not by a ``jsonschema.validate`` that checks the schema again on each call.
        A tool whose definition changed since start is not called (:meth:`check`)."""
        from ..json_schema import errors

        self.check(name)
        meta = {META_PREFIX + "idempotency_key": key} if key else None
        result = self.channel.tool_call(name, dict(arguments), meta, UPSTREAM_TIMEOUT)
        checker = self.checkers.get(name)
        if checker is not None and not result.isError:
            if result.structuredContent is None:
                raise ToolError(f"upstream `{name}` declares an output schema but answered "
                                "no structured content")
            try:
                found = errors(checker, result.structuredContent)
            except ValueError as exc:
                raise ToolError(f"upstream `{name}`'s output schema: {exc}") from None
            error = next(iter(sorted(found, key=lambda e: list(e.path))), None)
            if error is not None:
                raise ToolError(f"upstream `{name}` answered content that breaks its output "
                                f"schema: {error.message[:200]}")
        return result


#: seconds before the second attempt to start a gone upstream again (the first is at once);
#: each later one waits twice as long, up to :data:`RESTART_MAX`
RESTART_FIRST = 0.5
RESTART_MAX = 30.0


def _stop(channel: Channel) -> None:
    stop = getattr(channel, "stop", None)
    if stop is not None:
        with contextlib.suppress(Exception):
            stop()


@dataclass
class ProxiedTool:
    """One upstream tool under its contract: the function, the verifier, the lookup."""

    upstream: Upstream
    name: str
    tool_id: str
    contract: ToolContract
    #: the most the verifying read may answer (its canonical JSON), asked at each read:
    #: the runtime's ``input_limits.max_output_bytes`` in force, as for a tool's own answer
    max_read_bytes: Callable[[], int] | None = None

    def spec(self, tool: types.Tool) -> ToolSpec:
        """The tool's spec (:func:`spec_of`)."""
        return spec_of(self.tool_id, self.contract, tool, self.upstream.source)

    def run(self, call: ToolCall) -> dict[str, Any]:
        """The call to the upstream (the gateway's, after gate 1 and the intent)."""
        arguments = call.arguments.model_dump(mode="json")
        if self.contract.key_argument is not None:
            arguments[self.contract.key_argument] = call.idempotency_key
        try:
            result = self.upstream.call(self.name, arguments, key=call.idempotency_key)
        except Exception as exc:
            from .upstream_stdio import never_sent

            if not never_sent(exc):
                raise  # it may have reached the upstream: an unknown outcome
            # INVARIANT: a call whose request provably never reached the upstream wrote
            # nothing there: the tool's typed refusal — final for its key, no retry, no
            # human task — not an unknown outcome (tests/security/test_591, test_592); the
            # upstream is taken as gone already (the next call is refused before its intent)
            raise ToolRefused(NOT_REACHED, f"the upstream `{self.upstream.source}` was gone "
                              "before this call reached it: nothing of it was sent",
                              hint="the same idempotency key answers this refusal; make the "
                              "call again, with a new key, once the upstream is back (the "
                              "proxy is starting it again)") from None
        if result.isError:
            raise ToolError(f"upstream `{self.name}` answered an error: "
                            f"{answer(result).get('text', '')[:300]}")
        return answer(result)

    def read(self, arguments: Mapping[str, Any]) -> tuple[bool, bool, dict[str, Any], str]:
        """Read the effect back: (found, matches, what was read, detail)."""
        verify = self.contract.verify
        assert verify is not None
        result = self.upstream.call(verify.tool, _fill(verify.arguments, arguments))
        got = answer(result)
        self._check_size(got)
        if result.isError:
            return False, False, got, f"`{verify.tool}` found nothing"
        # INVARIANT: the read proves something only about the call's own record: an answer
        # that names another (or none) is not the effect's (tests/security/test_475)
        other = _differing(got, _fill(verify.identity_fields(), arguments))
        if other:
            return False, False, got, (f"`{verify.tool}` answered about another record "
                                       "than the call's (its identity: " + "; ".join(other)
                                       + ")")
        expected = _fill(verify.expect, arguments)
        wrong = _differing(got, expected)
        return True, not wrong, got, "; ".join(wrong)

    def _check_size(self, got: Mapping[str, Any]) -> None:
        """Raise when the read answered more than :attr:`max_read_bytes`: it is kept as the
        verification's evidence (journaled twice), so it is held to what a tool's answer
        is held to (``tests/security/test_33``) — past it, the read proves nothing (the
        effect is not confirmed; a lookup that raises opens a human task), and is not kept
        (``tests/security/test_226``)."""
        if self.max_read_bytes is None:
            return
        limit = self.max_read_bytes()
        size = len(canonical_json(dict(got)).encode("utf-8"))
        if size > limit:
            verify = self.contract.verify
            assert verify is not None
            raise ToolError(f"`{verify.tool}` of the upstream answered {size} bytes, more "
                            f"than the limit of {limit} (`input_limits.max_output_bytes`): "
                            "the read proves nothing and is not kept")

    def verify(self, req: VerifyRequest) -> VerifierReport:
        from ..verifiers import VerifierReport

        found, matches, got, detail = self.read(req.arguments.model_dump(mode="json"))
        checks = (VerificationCheck(name="resource_exists", status=_status(found),
                                    detail=detail if not found else ""),
                  VerificationCheck(name="expected_state", status=_status(found and matches),
                                    detail=detail))
        return VerifierReport(checks=checks, read_at=_now(), evidence={"read": got},
                              source=f"upstream:{self.upstream.source}")

    def lookup(self, call: ToolCall) -> dict[str, Any] | None:
        """Did the effect happen (crash recovery)? The declared read says."""
        found, matches, got, _ = self.read(call.arguments.model_dump(mode="json"))
        return got if found and matches else None


def spec_of(tool_id: str, contract: ToolContract, tool: types.Tool, source: str) -> ToolSpec:
    """The spec of the upstream's ``tool`` under ``contract``: its version names the
    upstream definition it was served under (the journal's ``tool_ref`` of each call), and
    what the agent is shown of it is the operator's word — the upstream's own only under a
    pin that matched at start. The proxy's and a strict replay's (:func:`recorded_spec`)."""
    c, name = contract, tool.name
    pin = pin_of(tool)
    vouched = c.pin is not None and c.pin == pin
    shown = None if vouched else grammar_of(tool.inputSchema)
    model = input_model(name, tool.inputSchema, shown)  # the schema checked first
    if shown is not None and (found := planted(shown)):
        raise InputError(f"the upstream's `{name}` names an argument or a "
                         f"definition with more than a plain word (at "
                         f"`{found[0][:80]}`): not served unpinned", hint=PIN_HINT)
    said = (tool.description or "") if vouched else ""
    return ToolSpec(
        id=tool_id, version="upstream-" + pin.removeprefix("sha256:")[:16],
        input_model=model,
        output_model=UpstreamOutput, side_effect_class=c.side_effect,
        idempotency=c.idempotency,
        verifier=tool_id + ".verify" if c.verify is not None else None,
        description=c.description or said or f"`{name}` of {source}",
        requires_evidence=c.requires_evidence, target_from=c.target,
        secret_arguments=c.secret_arguments)


def looked_up(spec: ToolSpec) -> bool:
    """Whether the proxy registers a lookup for ``spec``: a keyed (or natural) tool whose
    effect a declared read confirms."""
    keyed = spec.idempotency in (IdempotencyClass.KEYED, IdempotencyClass.NATURAL)
    return keyed and spec.verifier is not None


#: the run the proxy journals what it registered in (``tools.registered``, at each start)
TOOLS_RUN = "upstream-tools"
#: the kind of that record: what a strict replay rebuilds each upstream tool's spec from
TOOLS_REGISTERED = "tools.registered"
#: the kind of the record of a tool the upstream changed while the proxy ran (refused from
#: then on), once per change; strict replay copies it
TOOLS_CHANGED = "tools.changed"


def served_record(tool_id: str, tool: types.Tool, contract: ToolContract) -> dict[str, Any]:
    """What the journal keeps of one tool the proxy serves: its id, the upstream's
    definition its version hashes (:func:`definition_of`: the upstream's own words, which
    the pin covers) and the operator's contract. No URL and no credential: the upstream
    is named by :attr:`Upstream.source` alone, on the event."""
    return {"id": tool_id, "definition": definition_of(tool),
            "contract": contract.model_dump(mode="json", exclude_defaults=True)}


def recorded_spec(entry: Mapping[str, Any], source: str) -> ToolSpec:
    """The spec the proxy registered for one tool of a ``tools.registered`` record (built
    by :func:`spec_of`, as it was); :class:`InputError` when the record is not one."""
    require("mcp", extra="mcp")
    from mcp import types as mcp_types

    try:
        tool = mcp_types.Tool.model_validate(entry["definition"])
        contract = ToolContract.model_validate(entry["contract"])
        return spec_of(str(entry["id"]), contract, tool, source)
    except (KeyError, TypeError, ValueError) as exc:  # a ValidationError is a ValueError
        raise InputError(f"the journal's record of the upstream tool "
                         f"`{str(entry.get('id'))[:80]}` is not one the proxy writes: "
                         f"{str(exc).splitlines()[0][:200]}") from None


def _output_limit(runtime: Runtime) -> int:
    return runtime.config.input_limits.max_output_bytes


def _status(ok: bool) -> VerificationStatus:
    return VerificationStatus.VERIFIED if ok else VerificationStatus.FAILED


def _now() -> datetime:
    return datetime.now(UTC)


READ_ONLY = ToolContract(side_effect=SideEffectClass.READ_ONLY)


def register(runtime: Runtime, upstream: Upstream, tools: list[types.Tool],
             contracts: Contracts, *, prefix: str, allow_undeclared_read: bool) -> list[str]:
    """Register the upstream's tools that are declared (or read-only when allowed); the
    ids registered, in the upstream's order."""
    offered = {t.name for t in tools}
    missing = sorted(set(contracts.tools) - offered)
    verifiers = {c.verify.tool for c in contracts.tools.values() if c.verify is not None}
    for name in missing + sorted(verifiers - offered):
        raise InputError(f"the contracts name `{name}`, which the upstream does not offer",
                         hint="offered: " + ", ".join(sorted(offered))[:300])
    for tool in tools:  # every pin first: nothing is registered under a changed one
        pinned = contracts.tools[tool.name].pin if tool.name in contracts.tools else None
        if pinned is not None and pin_of(tool) != pinned:
            raise InputError(changed_message(tool.name, pinned, pin_of(tool)),
                             hint=REPIN_HINT)
    upstream.pins.update({t.name: pin_of(t) for t in tools if is_tool_name(t.name)})
    upstream.on_change = partial(_journal_change, runtime, upstream.source,
                                 {t.name: prefix + t.name for t in tools})
    ids: list[str] = []
    served: list[dict[str, Any]] = []
    for tool in tools:
        contract = contracts.tools.get(tool.name)
        if not is_tool_name(tool.name):  # never served: see `undeclared`
            continue
        if contract is None and not (allow_undeclared_read and upstream_says_read(tool)
                                     and served_unreviewed(tool)):
            continue
        if contract is not None:
            _check_templates(tool.name, contract, tool.inputSchema)
        proxied = ProxiedTool(upstream, tool.name, prefix + tool.name, contract or READ_ONLY,
                              partial(_output_limit, runtime))
        spec = proxied.spec(tool)
        if spec.verifier is not None:
            runtime.register_verifier(spec.verifier, proxied.verify)
        runtime.register_tool(spec, proxied.run,
                              lookup=proxied.lookup if looked_up(spec) else None,
                              ready=partial(upstream.ready, tool.name))
        ids.append(spec.id)
        served.append(served_record(spec.id, tool, proxied.contract))
    # INVARIANT: what was registered is journaled before any call of it, so that a strict
    # replay decides each call under the spec that decided it (tests/security/test_585)
    runtime.context.append([NewEvent(
        run_id=TOOLS_RUN, kind=TOOLS_REGISTERED, subject="upstream:" + upstream.source,
        actor=RUNTIME_ACTOR, at=runtime.clock(),
        payload={"source": upstream.source, "tools": served})])
    return ids


def _journal_change(runtime: Runtime, source: str, ids: Mapping[str, str], tool: str,
                    pin: str, listed: str | None) -> None:
    """Journal that the upstream changed ``tool`` while the proxy runs (``tools.changed``
    in :data:`TOOLS_RUN`, once per change: the operator's alert, the calls refused for it
    write nothing). Written in a transaction of its own, from a thread of its own: seen by
    a call's own check, inside a read's one transaction
    (:meth:`~cradle_kg.loop.context.LoopContext.one_transaction`, per thread), it would be
    held with that call's events — and lost with them when the call's claim is."""
    event = NewEvent(
        run_id=TOOLS_RUN, kind=TOOLS_CHANGED, subject="upstream:" + source,
        actor=RUNTIME_ACTOR, at=runtime.clock(),
        payload={"source": source, "tool": tool, "served_as": ids.get(tool), "pin": pin,
                 "listed": listed})
    failed: list[BaseException] = []

    def write() -> None:
        try:
            runtime.context.append([event])
        except BaseException as exc:  # raised in the caller's thread below
            failed.append(exc)

    writer = threading.Thread(target=write, name="upstream-tools-changed")
    writer.start()
    writer.join()
    if failed:
        raise failed[0]


def upstream_says_read(tool: types.Tool) -> bool:
    """Whether the upstream itself annotates ``tool`` as a read: ``readOnlyHint`` true and
    ``destructiveHint`` not true. What ``--allow-undeclared-read`` serves without a
    contract: the upstream's word may only narrow what is served — a tool it does not call
    a read (no annotation included) is never governed as one (found by the gateway review:
    an undeclared ``wipe`` was served with ``readOnlyHint`` and governed as a read)."""
    hints = tool.annotations
    return bool(hints is not None and hints.readOnlyHint is True
                and hints.destructiveHint is not True)


def served_unreviewed(tool: types.Tool) -> bool:
    """Whether a tool no contract names (``--allow-undeclared-read``) can be shown: its
    name — the upstream's, which no operator wrote — and its grammar's names are plain
    words (:func:`plain`, :func:`planted`)."""
    return plain(tool.name) and not planted(grammar_of(tool.inputSchema))


def undeclared(tools: list[types.Tool], contracts: Contracts) -> list[str]:
    """The upstream's tools that are not served even with ``--allow-undeclared-read``: no
    contract and the upstream does not annotate them as reads — or a name that is not an
    MCP tool name (``[A-Za-z0-9_.-]{1,128}``): the upstream's name becomes a tool id the
    runtime journals, shows and serves, so it may not carry markup, controls or bidi
    overrides (a hostile upstream's ``[/x]`` made the proxy's own report of it crash) — or,
    without a contract, a name or grammar that is more than plain words
    (:func:`served_unreviewed`)."""
    return [t.name for t in tools if not is_tool_name(t.name)
            or (t.name not in contracts.tools
                and not (upstream_says_read(t) and served_unreviewed(t)))]


def _check_templates(name: str, contract: ToolContract, schema: Mapping[str, Any]) -> None:
    """Every ``{field}`` a contract uses is an argument of the upstream tool (fail closed
    at start, not at the first call)."""
    known = set((schema.get("properties") or {}).keys())
    verify = contract.verify
    templates = [contract.target or "", *(verify.arguments.values() if verify else ()),
                 *(verify.expect.values() if verify else ()),
                 *(verify.identity_fields().values() if verify else ())]
    for template in templates:
        try:
            fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
        except ValueError as exc:
            raise InputError(f"contract of `{name}`: template `{template}`: {exc}") from None
        unknown = sorted(fields - known)
        if unknown:
            raise InputError(f"contract of `{name}`: `{{{unknown[0]}}}` is not an argument "
                             f"of the upstream tool", hint="its arguments: "
                             + ", ".join(sorted(known)) if known else None)


#: pages of ``tools/list`` read at most (each within ``UPSTREAM_TIMEOUT`` and the line cap)
MAX_TOOL_PAGES = 100
#: tools, and bytes of their definitions (JSON), the whole listing may hold: each page is
#: an answer within the line cap, and a hundred of them were kept whole
#: (``tests/security/test_321``)
MAX_UPSTREAM_TOOLS = 4096
MAX_TOOL_LIST_BYTES = 16 << 20


def listed_tools(channel: Channel) -> list[types.Tool]:
    """Every tool the upstream lists, page after page (its ``nextCursor``): read first page
    only, a tool on a later page could not be declared, and its pin not checked when the
    upstream listed again (``tests/security/test_139``). A name listed twice — two
    definitions, one of them unreviewed — more than :data:`MAX_TOOL_PAGES` pages, and a
    listing past :data:`MAX_UPSTREAM_TOOLS` tools or :data:`MAX_TOOL_LIST_BYTES` bytes are
    refused. Called from a worker thread."""
    tools: list[types.Tool] = []
    seen: set[str] = set()
    cursor: str | None = None
    size = 0
    for _ in range(MAX_TOOL_PAGES):
        page = channel.tools_page(cursor, UPSTREAM_TIMEOUT)
        # INVARIANT: the listing as a whole is bounded (tests/security/test_321): counted
        # before its definitions are measured, measured before they are kept
        if len(tools) + len(page.tools) > MAX_UPSTREAM_TOOLS:
            raise InputError(f"the upstream lists more than {MAX_UPSTREAM_TOOLS} tools")
        size += sum(len(t.model_dump_json(by_alias=True, exclude_none=True))
                    for t in page.tools)
        if size > MAX_TOOL_LIST_BYTES:
            raise InputError(f"the upstream's tool definitions take more than "
                             f"{MAX_TOOL_LIST_BYTES} bytes")
        for tool in page.tools:
            if tool.name in seen:
                said = f"`{tool.name}`" if is_tool_name(tool.name) else "a tool"
                raise InputError(f"the upstream lists {said} twice: which definition it "
                                 "serves cannot be told")
            seen.add(tool.name)
            tools.append(tool)
        cursor = page.nextCursor
        if not cursor:
            return tools
    raise InputError(f"the upstream lists its tools in more than {MAX_TOOL_PAGES} pages")


@contextlib.asynccontextmanager
async def connect(command: list[str] | None, url: str | None,
                  limits: InputLimits | None = None
                  ) -> AsyncIterator[tuple[Upstream, list[types.Tool]]]:
    """The upstream, started (``command``) or reached (``url``), initialized and listed.
    Its answers are read under ``limits`` — a started upstream's lines
    (:mod:`.upstream_stdio`), a reached upstream's bodies and events
    (:mod:`.upstream_http`) — and each request waits at most ``UPSTREAM_TIMEOUT``
    (``initialize`` and ``tools/list`` too: an upstream that never answers them does not
    hold the proxy at start)."""
    require("mcp", extra="mcp")
    import anyio.to_thread

    from ..inputs import InputLimits
    from .upstream_stdio import stdio_upstream, upstream_cap

    given = limits if limits is not None else InputLimits()
    cap = upstream_cap(given.max_bytes, given.max_output_bytes)
    stale = threading.Event()
    async with contextlib.AsyncExitStack() as stack:
        channel: Channel
        if url is not None:
            from .upstream_http import upstream_name

            channel = await stack.enter_async_context(_http_session(url, cap, stale))
            source = upstream_name(url)
        else:
            from mcp.shared.exceptions import McpError

            assert command
            try:
                client = stack.enter_context(stdio_upstream(command, cap, stale.set))
            except OSError as exc:
                raise InputError(f"the upstream `{command[0][:200]}` could not be started: "
                                 f"{exc.strerror or exc}") from None
            try:
                await anyio.to_thread.run_sync(client.initialize, UPSTREAM_TIMEOUT)
            except McpError as exc:
                raise InputError(f"the upstream `{command[0][:200]}` did not initialize: "
                                 f"{exc.error.message[:200]}") from None
            channel, source = client, command[0]
            restart = partial(_started_again, command, cap, stale.set)
        if url is not None:
            restart = partial(_reached_again, url, cap, stale)
        tools = await anyio.to_thread.run_sync(listed_tools, channel)
        upstream = Upstream(channel, source, output_checkers(tools), stale=stale,
                            restart=restart)
        stack.callback(upstream.close)
        yield upstream, tools


def _started_again(command: list[str], cap: int, on_list_changed: Callable[[], None]
                   ) -> Channel:
    """A stdio upstream started again and initialized (:meth:`Upstream.unavailable`)."""
    from .upstream_stdio import start_stdio

    client = start_stdio(command, cap, on_list_changed)
    try:
        client.initialize(UPSTREAM_TIMEOUT)
    except BaseException:
        client.stop()
        raise
    return client


def _reached_again(url: str, cap: int, stale: threading.Event) -> Channel:
    """An HTTP upstream reached again: a new session, initialized, run on an event loop of
    its own (:meth:`Upstream.unavailable`; the session before it is gone with the upstream
    it spoke to)."""
    from anyio.from_thread import start_blocking_portal

    closer = contextlib.ExitStack()
    try:
        portal = closer.enter_context(start_blocking_portal())
        channel = closer.enter_context(portal.wrap_async_context_manager(
            _http_session(url, cap, stale)))
    except BaseException:
        closer.close()
        raise
    channel.portal, channel.closer = portal, closer
    return channel


@contextlib.asynccontextmanager
async def _http_session(url: str, cap: int, stale: threading.Event
                        ) -> AsyncIterator[SessionChannel]:
    """The SDK's session over streamable HTTP, its answers read capped
    (:mod:`.upstream_http`), initialized."""
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamablehttp_client

    from .upstream_http import client_factory

    async def notified(message: Any) -> None:
        # the upstream's tool list changed: listed again before the next call (not here,
        # on the session's receive loop, which that listing's answer needs)
        if isinstance(message, types.ServerNotification) and isinstance(
                message.root, types.ToolListChangedNotification):
            stale.set()

    lost = threading.Event()
    unsent: set[str] = set()  # the channel's (SessionChannel.unsent), told by the transport

    def never_reached(request: Any) -> None:
        from .upstream_http import call_key

        key = call_key(request, META_PREFIX + "idempotency_key")
        if key is not None:
            unsent.add(key)

    factory = client_factory(url, cap=cap, deadline=UPSTREAM_TIMEOUT, lost=lost.set,
                             unsent=never_reached)
    async with streamablehttp_client(url, httpx_client_factory=factory) as (read, write, _), \
            ClientSession(read, write, read_timeout_seconds=timedelta(seconds=UPSTREAM_TIMEOUT),
                          message_handler=notified) as session:
        await session.initialize()
        yield SessionChannel(session, lost, unsent=unsent)
