"""LangGraph: a governed drop-in for ``ToolNode``, and LangChain tools that propose.

    from cradle_kg.integrations.langgraph import GovernedToolNode

    tools = GovernedToolNode(runtime, "agent:ledger-assistant")
    model = chat_model.bind_tools(tools.tools)        # the schemas of the home's tools
    graph.add_node("tools", tools)                    # instead of ToolNode(tools)

Every tool call the model makes becomes a proposal through ``Runtime.submit``, as the
configured agent — never an identity the model chose. What the host application knows
(the person the agent acts for, facts, the user's request) it passes in the run's
``configurable`` under the documented ``cradle-kg/`` keys of MCP's ``_meta``
(:data:`~cradle_kg.integrations.calls.META_KEYS`): ``graph.invoke(state, {"configurable":
{"thread_id": "t1", "cradle-kg/on_behalf_of": "customer:c1"}})``. A refused call (denied, clarify,
repair, failed verification) comes back as a ``ToolMessage`` with ``status="error"`` whose
text carries the reasons and reason codes, so the model can correct itself. A call that
needs a human approval pauses the graph with :func:`langgraph.types.interrupt`; the
payload names the approval; resuming with ``Command(resume={"approver": ID, "token": T,
"decision": "approved"})`` decides it (the runtime authenticates the approver; the
decision is ``approved`` — the default —, ``rejected`` or ``changes_requested``, with an
optional text ``"reason"``, and best the ``"approval_id"`` the payload named: a resume
naming another approval, or deciding one the node's second run asked for just now, is
refused, and one naming none decides nothing while another approval of the run waits —
LangGraph hands resume values to a node's interrupts by position, and a ``ToolNode`` runs a
message's calls at once; anything else is refused and journals nothing), and
resuming with anything else reads the decision an approver made elsewhere (web page,
CLI). Proposal ids are ``<thread>:<tool_call_id>``: the node's re-run after a resume
submits the same proposal again, which the runtime answers from its record.

**LangGraph Server** (LangGraph Platform, ``langgraph dev``/``up``): there the run's
``configurable`` comes from the client's request, so its ``cradle-kg/`` keys are the
client's word, not the host's — and lineage trusts ``cradle-kg/facts`` and
``cradle-kg/input`` as the host's facts and the person's request. This adapter cannot tell
who wrote ``configurable``: in such a deployment drop every ``cradle-kg/`` key the client
sent and set the ones you need server-side, in the graph's own code, from state the server
authenticated (its auth handler's ``langgraph_auth_user``), invoking the governed node
with that config (the README's LangGraph section shows how).

Needs ``pip install 'cradle-kg[langgraph]'``; the core never imports LangGraph.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from functools import cache
from typing import TYPE_CHECKING, Any

from ..errors import CradleError, InputError
from ..records import ApprovalStatus, OutcomeStatus
from . import require
from .calls import META_PREFIX, CallResult, GovernedSession, HostMeta, host_meta, refused

if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import BaseTool

    from ..loop.runtime import Runtime


def tool_name(tool_id: str) -> str:
    """A tool id as the name model APIs accept (``[A-Za-z0-9_-]``)."""
    return "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in tool_id)


def host_keys(runtime: Runtime) -> HostMeta:
    """The host's keys of the current call: the ``cradle-kg/`` keys of the run's
    ``configurable`` — what the host application passes when it invokes the graph or the
    tool (``config={"configurable": {"thread_id": …, "cradle-kg/on_behalf_of": …,
    "cradle-kg/facts": […]}}``), never the model — checked as MCP's ``_meta`` is
    (:func:`~cradle_kg.integrations.calls.host_meta`: the same documented keys; another
    ``cradle-kg/`` key is refused)."""
    from langchain_core.runnables.config import ensure_config

    configurable = ensure_config().get("configurable") or {}
    return host_meta({k: v for k, v in configurable.items()
                      if isinstance(k, str) and k.startswith(META_PREFIX)}, runtime)


#: the id of the tool call a tool of :func:`governed_tools` runs for (a ``ToolNode`` invokes
#: it with the model's ``ToolCall``), None when it is invoked with bare arguments
_TOOL_CALL_ID: ContextVar[str | None] = ContextVar("cradle_kg_tool_call_id", default=None)


@cache
def _governed_tool_class() -> type[Any]:
    """``StructuredTool`` that tells its function the id of the tool call it runs for:
    the proposal id of the call, the same when LangGraph runs the node again on a resume
    (``tests/security/test_225``)."""
    from langchain_core.tools import StructuredTool

    class GovernedTool(StructuredTool):
        def run(self, tool_input: Any, *args: Any, tool_call_id: str | None = None,
                **kwargs: Any) -> Any:
            token = _TOOL_CALL_ID.set(tool_call_id)
            try:
                return super().run(tool_input, *args, tool_call_id=tool_call_id, **kwargs)
            finally:
                _TOOL_CALL_ID.reset(token)

        async def arun(self, tool_input: Any, *args: Any, tool_call_id: str | None = None,
                       **kwargs: Any) -> Any:
            token = _TOOL_CALL_ID.set(tool_call_id)
            try:
                return await super().arun(tool_input, *args, tool_call_id=tool_call_id,
                                          **kwargs)
            finally:
                _TOOL_CALL_ID.reset(token)

    return GovernedTool


def governed_tools(runtime: Runtime, agent: str, *, only: Sequence[str] | None = None,
                   session: GovernedSession | None = None) -> list[BaseTool]:
    """LangChain tools for the home's tools; each call is ``Runtime.submit`` as ``agent``.

    Inside a graph, a call that needs an approval interrupts it (see the module's doc);
    a refused call raises ``ToolException``, which a ``ToolNode`` turns into an error
    ``ToolMessage`` carrying the reasons.
    """
    require("langchain_core", extra="langgraph")
    from langchain_core.tools import ToolException

    sessions = ThreadSessions(runtime, agent) if session is None else None
    tools: list[BaseTool] = []
    for spec in runtime.tools.specs():
        if only is not None and spec.id not in only:
            continue

        def caller(tool_id: str) -> Callable[..., dict[str, Any]]:
            # INVARIANT: the tool id is bound here, never a parameter of the function
            # LangChain calls with the model's arguments as keywords: with
            # `def call(_tool_id=spec.id, **arguments)`, a call of the balance tool with
            # `"_tool_id": "demo.ledger.credit"` credited (tests/security/test_112)
            def call(**arguments: Any) -> dict[str, Any]:
                try:
                    meta = host_keys(runtime)
                except InputError as exc:
                    raise ToolException(refused(exc, {"tool": tool_id}).text) from None
                if sessions is None:
                    assert session is not None
                    # one session for every thread: a tool call id says nothing unique
                    # in it (a resume's second run is a new proposal, and `shown_before`
                    # keeps a resume from deciding it)
                    held, result = session, session.call(tool_id, arguments, meta)
                else:
                    held, pid, step = sessions.current(meta.run)
                    result = held.call(tool_id, arguments, meta, proposal_id=pid, step=step)
                result = decided(held, result, tool_id)
                if result.is_error:
                    raise ToolException(result.text)
                return result.structured
            return call

        # the schema as JSON, not the model: LangChain then hands the arguments over as the
        # model sent them (with the model class it validates them first, coercing values
        # and dropping the keys it does not declare), and the runtime's contract checks
        # them, as on MCP
        tools.append(_governed_tool_class().from_function(
            func=caller(spec.id), name=tool_name(spec.id),
            args_schema=spec.input_model.model_json_schema(),
            description=spec.description or spec.id, handle_tool_error=True,
            metadata={"cradle_kg_tool": spec.id}))
    return tools


class ThreadSessions:
    """The session of the graph thread a tool of :func:`governed_tools` is called in: its
    run is ``run:<agent id>/lg-<thread_id>`` (``GovernedToolNode``'s; in the agent's
    namespace, which no other agent can claim: ``tests/security/test_235``), never one run
    shared by every
    thread that calls the same tools — where one thread's recorded request was a trusted
    origin of another's actions, and one user of an application could give the value an
    e-mail injected into another user's agent the person's word
    (``tests/security/test_119``). Outside a graph (no ``thread_id``), one session of its
    own. Proposal ids are ``lg-<thread>:<nonce>-<step>``: the step counts this object's
    calls in the thread, the nonce tells it from another process's (or a forgotten
    session's) counter on the same thread. The sessions of the least recently used
    threads past :attr:`MAX_THREADS` are forgotten (a new nonce, a new count). A call a
    ``ToolNode`` makes for a model's tool call is ``lg-<thread>:<tool call id>`` instead,
    as ``GovernedToolNode``'s: the node LangGraph runs again on a resume submits the
    interrupted proposal again, not a new one (``tests/security/test_225``)."""

    MAX_THREADS = 4096

    def __init__(self, runtime: Runtime, agent: str) -> None:
        self.runtime, self.agent = runtime, agent
        self._default = GovernedSession(runtime, agent, origin="lg")
        self._threads: OrderedDict[str, tuple[GovernedSession, str, OrderedDict[str, int]]] = (
            OrderedDict())
        self._lock = threading.Lock()

    def current(self, run: str | None = None) -> tuple[GovernedSession, str | None, int | None]:
        """The session of the calling thread, the id of the proposal it makes now and its
        step (None: the session's next); ``run``: the run the host named, if any."""
        from langchain_core.runnables.config import ensure_config

        thread = (ensure_config().get("configurable") or {}).get("thread_id")
        if thread is None:
            return self._default, None, None
        with self._lock:
            held = self._threads.get(str(thread))
            if held is None:
                held = (GovernedSession(self.runtime, self.agent, session_id=f"lg-{thread}"),
                        secrets.token_hex(4), OrderedDict())
                self._threads[str(thread)] = held
                while len(self._threads) > self.MAX_THREADS:
                    self._threads.popitem(last=False)
            self._threads.move_to_end(str(thread))
        session, nonce, steps = held
        call_id = _TOOL_CALL_ID.get()
        if call_id is None:
            step = session.next_step(run or session.run_id)
            return session, f"{session.session_id}:{nonce}-{step}", step
        pid = f"{session.session_id}:{call_id}"
        return session, pid, call_step(session, steps, call_id, pid, run or session.run_id)


_STEPS_LOCK = threading.Lock()


#: the tool calls of one session whose steps are kept (the newest; an older one made again
#: is a new step, and so its proposal id's reuse: denied, nothing run)
MAX_CALL_STEPS = 4096


def call_step(session: GovernedSession, steps: OrderedDict[str, int], call_id: str,
              proposal_id: str, run_id: str) -> int:
    """The step of the proposal of tool call ``call_id`` in ``session``: a proposal's step
    is part of it, so the call the node makes again on a resume keeps the one it had —
    also in another process (a graph resumed on another worker), or once forgotten here:
    then the journal's proposal of that id in ``run_id`` says it."""
    with _STEPS_LOCK:
        known = steps.get(call_id)
    if known is None and session.readable(proposal_id, run_id):
        received = session.runtime.journal.events_for_subject(
            proposal_id, run_id=run_id, kinds=("proposal.received",))
        recorded = received[0].payload.get("proposal", {}).get("step") if received else None
        known = recorded if isinstance(recorded, int) and recorded > 0 else None
    if known is None:
        session.count_in(run_id)  # a new call: its step is new in the run (test_462)
    with _STEPS_LOCK:
        step = steps.get(call_id) or known or session.next_step(run_id)
        steps[call_id] = step
        steps.move_to_end(call_id)
        while len(steps) > MAX_CALL_STEPS:
            steps.popitem(last=False)
    return step


def decided(session: GovernedSession, result: CallResult, tool_id: str) -> CallResult:
    """A call that waits for an approval pauses the graph until it is resumed.

    INVARIANT: LangGraph hands a node's resume values to its ``interrupt()`` calls by
    position, so a call keeps its place among them once it has paused the graph: a call
    whose proposal waited for an approval calls ``interrupt()`` again in every later run
    of the node, decided or not, and drops what it is handed (the value given for it).
    Before, a call decided since asked nothing, and the next call's ``interrupt()`` was
    handed the earlier call's value: an approval given for one call decided another, and
    the decision given for that one was never read (``tests/security/test_460``)."""
    from langgraph.types import interrupt

    if result.status != "awaiting_approval":
        if waited_before(session, result):
            interrupt({"approval_id": result.approval_id, "tool": tool_id,
                       "proposal_id": result.meta.get(META_PREFIX + "proposal"),
                       "run_id": result.meta.get(META_PREFIX + "run"),
                       "status": result.status,
                       "reasons": ["decided already: resume with anything to go on"]})
        return result
    answer = interrupt({"approval_id": result.approval_id, "tool": tool_id,
                        "proposal_id": result.meta.get("cradle-kg/proposal"),
                        "run_id": result.meta.get("cradle-kg/run"),
                        "reasons": result.structured.get("reasons", []),
                        "how_to_decide": result.structured.get("how_to_decide", "")})
    if isinstance(answer, Mapping) and answer.get("approver") and result.approval_id:
        try:
            shown_before(session, result, answer.get("approval_id"))
            session.runtime.decide_approval(
                result.approval_id, approver_id=str(answer["approver"]),
                token=str(answer.get("token", "")),
                status=ApprovalStatus(str(answer.get("decision", "approved"))),
                reason=answer.get("reason"))
        except (CradleError, ValueError) as exc:  # fail closed: the call stays refused
            message = exc.message if isinstance(exc, CradleError) else str(exc)
            return CallResult(status="approval_refused", is_error=True,
                              structured={**result.structured, "reasons": [message]},
                              text=f"approval_refused: {message}", meta=result.meta,
                              outcome=result.outcome)
    return session.latest(result, tool_id)


def waited_before(session: GovernedSession, result: CallResult) -> bool:
    """Whether the proposal of ``result`` (a call that does not wait now) waited for an
    approval before: it paused the graph then (:func:`decided`). One read of its
    outcomes in its run (a call answered from its record carries no approval: asked)."""
    outcome = result.outcome
    if outcome is None:  # refused before the loop: nothing journaled, never waited
        return False
    earlier = session.runtime.journal.events_for_subject(
        outcome.proposal_id, run_id=outcome.run_id, kinds=("run.outcome",))
    waiting = str(OutcomeStatus.AWAITING_APPROVAL)
    return any(e.payload.get("outcome", {}).get("status") == waiting for e in earlier)


def shown_before(session: GovernedSession, result: CallResult, named: Any = None) -> None:
    """Raise unless the approval ``result`` waits for was already waiting before this run
    of the node: a resume value decides the approval its interrupt showed, never one this
    run asked for just now — the same node run again (LangGraph's resume) may have made
    another call, with other arguments (a model asked again), that no approver has seen
    (``tests/security/test_225``). The interrupted proposal submitted again has an
    earlier outcome (waiting) in its run; a new one has only this one. ``named``: the
    ``approval_id`` the resume value gives (the interrupt's payload names it): when given,
    it must be this one."""
    outcome = result.outcome
    assert outcome is not None and outcome.approval is not None
    if named is not None and named != outcome.approval.id:
        raise InputError(
            f"the resume decides approval `{str(named)[:80]}`, and this call waits for "
            f"`{outcome.approval.id}`: a resume decides only the approval it names",
            hint="an approver decides the other one on the web page or with "
            "`cradle-kg approvals approve`")
    if named is None:
        # INVARIANT: a resume value that names no approval decides one only when it can be
        # told which: LangGraph hands resume values to a node's interrupts by position, and
        # a ``ToolNode`` runs a message's calls at once, in no set order — a value given
        # for one call's interrupt was handed to another's, and decided its approval
        # (tests/security/test_461). With another approval of the run waiting, it names one
        _, waiting = session.runtime.approvals.pending_page(run_id=outcome.run_id, limit=1)
        if waiting > 1:
            raise InputError(
                f"the resume names no approval, and {waiting} approvals of run "
                f"`{outcome.run_id}` wait: which one it decides cannot be told",
                hint="resume with the `approval_id` the interrupt's payload names")
    earlier = session.runtime.journal.events_for_subject(
        outcome.proposal_id, run_id=outcome.run_id, kinds=("run.outcome",))
    if len(earlier) < 2:
        raise InputError(
            f"approval `{outcome.approval.id}` was asked for by this run of the node, "
            "after the interrupt the resume answers was shown: a resume decides only the "
            "approval its interrupt named", hint="an approver decides it on the web page "
            "or with `cradle-kg approvals approve`; then resume without a decision")


class GovernedToolNode:
    """A graph node that runs the last AI message's tool calls through the runtime.

    A drop-in for ``langgraph.prebuilt.ToolNode`` in a messages graph: it reads
    ``state[messages_key]`` and returns ``{messages_key: [ToolMessage, ...]}``.
    """

    def __init__(self, runtime: Runtime, agent: str, *, only: Sequence[str] | None = None,
                 messages_key: str = "messages") -> None:
        require("langgraph", extra="langgraph")
        self.runtime = runtime
        self.agent = agent
        self.messages_key = messages_key
        self.tools = governed_tools(runtime, agent, only=only)
        self._ids = {tool_name(s.id): s.id for s in runtime.tools.specs()
                     if only is None or s.id in only}
        self._default = GovernedSession(runtime, agent, origin="lg")

    def _session(self) -> GovernedSession:
        from langgraph.config import get_config

        try:
            thread = get_config().get("configurable", {}).get("thread_id")
        except RuntimeError:  # called outside a graph
            thread = None
        if thread is None:
            return self._default
        return GovernedSession(self.runtime, self.agent, session_id=f"lg-{thread}")

    def __call__(self, state: Any) -> dict[str, list[ToolMessage]]:
        from langchain_core.messages import AIMessage, ToolMessage

        messages = state[self.messages_key] if isinstance(state, Mapping) else state
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if last is None or not last.tool_calls:
            return {self.messages_key: []}
        session = self._session()
        out: list[ToolMessage] = []
        steps: OrderedDict[str, int] = OrderedDict()
        try:
            meta: HostMeta | InputError = host_keys(self.runtime)
        except InputError as exc:
            meta = exc
        for call in last.tool_calls:
            tool_id = self._ids.get(call["name"])
            if tool_id is None:
                out.append(ToolMessage(content=f"unknown tool `{call['name']}`",
                                       tool_call_id=call["id"] or "", name=call["name"],
                                       status="error"))
                continue
            if isinstance(meta, InputError):
                result = refused(meta, {"tool": tool_id})
            else:
                # a call made again (the node run again on a resume) keeps the step its
                # proposal was recorded with; a new one takes a step new in the run — not
                # one counted from the graph's messages, which another process's graph (or
                # trimmed messages) counts again from 1 (tests/security/test_462)
                pid = f"{session.session_id}:{call['id']}"
                step = call_step(session, steps, str(call["id"] or ""), pid,
                                 meta.run or session.run_id)
                result = session.call(tool_id, call["args"], meta, step=step, proposal_id=pid)
            result = decided(session, result, tool_id)
            out.append(ToolMessage(content=result.text, tool_call_id=call["id"] or "",
                                   name=call["name"], artifact=result.structured,
                                   status="error" if result.is_error else "success"))
        return {self.messages_key: out}
