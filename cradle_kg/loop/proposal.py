"""Reading a proposal from an agent: the one parser behind the CLI, the API and the SDK.

``read_proposal`` takes the raw bytes (a file, stdin, a request body) through the strict
loader of :mod:`cradle_kg.inputs`; ``parse_proposal`` takes a decoded value or a
:class:`~cradle_kg.records.Proposal` and checks it against the home's limits. Both raise a
one-line :class:`~cradle_kg.errors.ProposalError` (or :class:`InputTooLargeError` for too
many bytes) and journal nothing. ``recorded_answer`` answers the identical proposal,
submitted again, from the record.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..canonical import canonical_json
from ..errors import InputError, InputTooLargeError, ProposalError, RunOwnershipError
from ..graph.iris import IRI_SPACE
from ..inputs import DEFAULT_LIMITS, InputLimits, check_value, load_json
from ..lineage.index import HOST_FACT_PREFIX
from ..records import Outcome, OutcomeStatus, Proposal
from ..storage import NewEvent
from .context import LoopContext


def read_proposal(data: str | bytes, limits: InputLimits = DEFAULT_LIMITS, *,
                  source: str = "proposal") -> dict[str, Any]:
    """Decode one proposal document; it must be a JSON object within ``limits``."""
    try:
        raw = load_json(data, limits=limits, source=source)
    except InputTooLargeError:
        raise
    except InputError as exc:
        raise ProposalError(exc.message, hint=exc.hint) from None
    if not isinstance(raw, dict):
        raise ProposalError(f"`{source}`: a proposal is a JSON object")
    return raw


def parse_proposal(raw: Proposal | dict[str, Any], limits: InputLimits = DEFAULT_LIMITS
                   ) -> Proposal:
    """A validated proposal within ``limits``, or a one-line :class:`ProposalError`.

    Scalars are strict (``"false"`` is not a boolean, ``"1"`` not an integer); the raw
    value is checked *before* pydantic walks it, so no hostile structure reaches it.
    """
    try:
        if isinstance(raw, Proposal):
            raw.check_limits(limits)
            proposal = raw
        elif not isinstance(raw, dict):
            raise ProposalError("proposal: a proposal is a JSON object")
        else:
            check_value(raw, limits=limits, where="proposal")
            proposal = Proposal.model_validate(raw, context={"input_limits": limits})
        size = len(canonical_json(proposal).encode("utf-8"))
    except ValidationError as exc:
        raise ProposalError(_validation_message(exc)) from None
    except ProposalError:
        raise
    except InputError as exc:
        raise ProposalError(f"proposal: {exc.message}") from None
    except (ValueError, TypeError) as exc:  # canonical JSON refused a value
        raise ProposalError(f"proposal: {exc}") from None
    if size > limits.max_bytes:
        raise InputTooLargeError(f"proposal: {size} bytes is more than the limit of "
                                 f"{limits.max_bytes} bytes")
    return proposal


#: the namespaces the runtime names its own records in, which are the subjects of their
#: events (actions ``act:``, their decisions, observations, verifications, transitions,
#: compensations; approvals, human tasks, budgets, workflow steps, evidence; journal keys).
#: A proposal's events are about its id: an agent's proposal named ``act:<hex>`` wrote
#: its denied outcome onto that action (a replay of its key answered "denied", recovery no
#: longer saw its intent, its worker's fenced commit was refused). Every new namespace of
#: a runtime subject belongs here (``tests/security/test_58`` checks the golden journals).
RESERVED_ID_NAMESPACES = frozenset({
    "act", "dec", "obs", "ver", "st", "comp", "approval", "approval-once", "task", "budget",
    "step", "idem", "proposal", "run-claim", "task-claim", "sha256", "workflow", "autonomy",
    "policyset"})


#: the runs the runtime journals its own records in, outside any agent's run: every
#: evidence blob a person or an agent adds (``cradle_kg.evidence.EVIDENCE_RUN``) and the
#: budgets (``cradle_kg.workflow.budgets.BUDGET_RUN``), the records that an identity
#: reached a quota (``cradle_kg.throttling.QUOTA_RUN``); a human step's autonomy is in
#: ``autonomy:<workflow>/<step>``, a namespace of :data:`RESERVED_ID_NAMESPACES`; the tools
#: ``mcp proxy`` registered (``cradle_kg.integrations.proxy.TOOLS_RUN``)
RUNTIME_RUNS = frozenset({"evidence", "budgets", "quotas", "upstream-tools"})


_GRAPH_IRI_ID = ("it begins with `<` or `https://w3id.org/cradle/`, the graph's own IRIs: "
                 "a query asked for it would read it as another object's IRI")


def graph_iri_id(ident: str) -> bool:
    """Whether ``ident`` reads as one of the graph's own IRIs when a named query is asked
    for it (:func:`cradle_kg.graph.queries.term_for`): ``<…>``, or in :data:`IRI_SPACE`.

    INVARIANT: no id an agent, its host or a workflow's caller chooses (run, task,
    proposal) is one: a run named ``https://w3id.org/cradle/run/payroll`` was shown, asked
    by its id (the web page's run view), the events of another agent's run ``payroll``
    (``tests/security/test_387``)."""
    return ident.startswith(("<", IRI_SPACE))


def reserved_run(run_id: str) -> str | None:
    """Why an agent, its host or a workflow's caller may not name ``run_id`` as its run, or
    None: one of the runtime's own runs (:data:`RUNTIME_RUNS`, ``autonomy:…``), or an id in
    a namespace the runtime names its records in (:data:`RESERVED_ID_NAMESPACES`) — a run's
    claim (``run.claimed``) is an event *about* the run id, as a proposal's events are about
    the proposal's id.

    Before, an agent's proposals went into ``autonomy:credit-review/review``, which the
    engine read whole each time a run of that workflow reached its human step, and a
    workflow could be started in ``evidence`` or ``budgets`` (``tests/security/test_94``)."""
    if run_id in RUNTIME_RUNS:
        return f"`{run_id}` is a run the runtime journals its own records in"
    if graph_iri_id(run_id):
        return _GRAPH_IRI_ID
    namespace, colon, _ = run_id.partition(":")
    if colon and namespace.lower() in RESERVED_ID_NAMESPACES:
        return (f"`{namespace}:` is a namespace the runtime names its own records and runs "
                "in (actions, approvals, tasks, autonomy, ...): a run's id may not begin "
                "with it")
    return None


def agent_run_id(agent_id: str, name: str) -> str:
    """The run an integration derives for ``agent_id`` (a session, a graph thread):
    ``run:<agent id>/<name>``, in the agent's namespace (:func:`run_namespace_owner`).

    INVARIANT: ``name`` holds no ``/`` (escaped, as ``%`` is, ``%2F`` and ``%25``): an
    agent id may hold one, and with ``agent:a`` and ``agent:a/lg-t`` both configured, the
    run of ``agent:a``'s graph thread ``t/1`` was ``run:agent:a/lg-t/1`` — in
    ``agent:a/lg-t``'s namespace (the longest id's), which claimed it, and ``agent:a`` was
    refused in its own derived run (``tests/security/test_240``)."""
    escaped = name.replace("%", "%25").replace("/", "%2F")
    return f"run:{agent_id}/{escaped}"


def run_namespace_owner(run_id: str) -> str | None:
    """The identity whose namespace ``run_id`` is in, or None: ``run:<x>/<rest>``, whose
    ``<rest>`` holds no ``/``, is identity ``<x>``'s alone — whoever ``<x>`` is, an agent
    the configuration declares now, one it will declare tomorrow, a person, or nobody
    yet. A run id outside that form (``run:support-42``, ``wf-…``) is in no namespace.

    INVARIANT: the namespace is a property of the run id's form, never of the
    declarations in force: a run ``run:newbot/abc`` another agent claimed before the
    operator declared ``newbot`` stayed the claimant's, and ``newbot``'s own thread of the
    name was refused there (``tests/security/test_259``). The derived name has its ``/``
    escaped (:func:`agent_run_id`), so the last ``/`` ends the owner's id, and of two
    nested ids (``agent:a``, ``agent:a/lg-t``) a run is in one namespace only
    (``tests/security/test_240``)."""
    prefix, slash, _ = run_id.rpartition("/")
    if not slash or not prefix.startswith("run:"):
        return None
    return prefix[len("run:"):]


def check_run_namespace(run_id: str, agent_id: str) -> None:
    """Raise :class:`RunOwnershipError` when ``run_id`` is in another identity's
    namespace (:func:`run_namespace_owner`), before anything is journaled.

    INVARIANT: the runs the integrations derive (a LangGraph thread's, an MCP session's:
    :func:`agent_run_id`) are claimed by their agent alone, whoever gets there first —
    thread ids are guessable (``1``, a user id), and an agent that claimed a thread's run
    first had every later call of the thread refused (``tests/security/test_235``); so
    were an agent's runs claimed before it was declared (``test_259``)."""
    owner = run_namespace_owner(run_id)
    if owner is not None and owner != agent_id:
        raise RunOwnershipError(
            f"`run_id`: run `{run_id}` belongs to `{owner}`: it is in that identity's "
            f"namespace (`run:{owner}/…`), declared or not, where only it proposes",
            hint="start a new run (leave `run_id` out, or name one outside "
                 "`run:<identity>/…`); a task id with a `/` derives such a run: give "
                 "`run_id`")


def check_agent_proposal(proposal: Proposal) -> Proposal:
    """``proposal`` as an agent (or its host) may submit it: its id is in no namespace the
    runtime names its own records in (:data:`RESERVED_ID_NAMESPACES`), nor is its run one
    of the runtime's own (:func:`reserved_run`), or a one-line :class:`ProposalError`.
    The runtime's own proposals (a compensation's ``comp:…``) are submitted without this
    check."""
    namespace, colon, _ = proposal.id.partition(":")
    if colon and namespace.lower() in RESERVED_ID_NAMESPACES:
        raise ProposalError(
            f"proposal: `id`: `{namespace}:` is a namespace the runtime names its own "
            "records in (actions, decisions, approvals, tasks, ...): a proposal's id may "
            "not begin with it", hint="choose another id, e.g. without the colon")
    for name, ident in (("id", proposal.id), ("task_id", proposal.task_id)):
        if graph_iri_id(ident):
            raise ProposalError(f"proposal: `{name}`: {_GRAPH_IRI_ID}",
                                hint="choose another id")
    why = reserved_run(proposal.run_id) if proposal.run_id is not None else None
    if why is not None:
        raise ProposalError(f"proposal: `run_id`: {why}",
                            hint="choose another run id, or leave it out (`run:<task_id>`)")
    return proposal


def host_asserted_fact(proposal: Proposal) -> int | None:
    """The index of the first fact ``proposal`` carries in the host's namespace, or None.

    A fact whose ``source`` begins with ``host:`` is the host application's word (an MCP or
    LangGraph host's ``cradle-kg/facts``): lineage takes its object as a *trusted* origin,
    as it takes the person's request. Only the host writes such a fact; an entry point that
    takes the whole proposal from an agent (``POST /api/proposals``) refuses one, or the
    agent could give a value an injected document told it a trusted origin
    (``tests/security/test_59``)."""
    return next((i for i, fact in enumerate(proposal.facts)
                 if fact.source.startswith(HOST_FACT_PREFIX)), None)


def principal_stated_fact(proposal: Proposal) -> int | None:
    """The index of the first fact ``proposal`` carries whose ``source`` is the principal
    it acts for (``on_behalf_of``), or None.

    A pack may take such a fact as that person's own statement (``travel.airline``: the
    customer's "yes", the reason they cancel, the compensation they ask for): only the
    host that hears the person writes one. An entry point that takes the whole proposal
    from an agent (``POST /api/proposals``) refuses one, or the agent could speak for the
    customer — a cancellation nobody asked for executed unattended
    (``tests/security/test_151``)."""
    who = proposal.on_behalf_of
    if not who:
        return None
    return next((i for i, fact in enumerate(proposal.facts) if fact.source == who), None)


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    loc = ".".join(str(x) for x in first["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    error = first.get("ctx", {}).get("error")
    if first["type"] == "value_error" and error is not None:
        message = str(error)  # our own limit messages: keep the case of the values
    else:
        message = first["msg"].lower()
    return f"proposal: `{loc}`: {message}{more}" if loc else f"proposal: {message}{more}"


def recorded_answer(ctx: LoopContext, proposal: Proposal) -> Outcome | None:
    """The identical proposal again: its recorded outcome, once it has a final one.

    An outcome still waiting (for an approval, or for another submission holding the
    key) is not final: the proposal goes through the loop again, as it always did.
    """
    event = ctx.journal.latest_outcome(proposal.effective_run_id, proposal.id)
    if event is None:
        return None
    recorded = Outcome.model_validate(event.payload["outcome"])
    if recorded.status in (OutcomeStatus.AWAITING_APPROVAL, OutcomeStatus.IN_PROGRESS):
        return None
    ctx.append([NewEvent(
        run_id=proposal.effective_run_id, kind="proposal.replayed", subject=proposal.id,
        actor=proposal.agent_id, at=ctx.clock(),
        payload={"proposal_id": proposal.id, "attempt": proposal.attempt,
                 "outcome_seq": event.seq, "status": str(recorded.status)})])
    return recorded.model_copy(update={"replayed": True})

