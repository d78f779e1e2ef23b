"""The one error tree of cradle-kg.

Outcomes are data, failures are exceptions: a deny, a needs_clarification, a SHACL
violation or a failed verification is a *record*. These exceptions are raised only when
no decision can be made at all — and then the gate fails closed.

    CradleError
    ├── InputError                  bad input from a user or an agent (CLI exit 2, HTTP 422)
    │   ├── InputTooLargeError      more bytes than the configured limit (HTTP 413)
    │   ├── ProposalError           a proposal that is not well-formed
    │   ├── ManifestError           a pack manifest that is malformed or names a missing file
    │   ├── WorkflowFileError       a workflow YAML file that does not load (``file:line``)
    │   ├── RdfParseError           Turtle, TriG, N-Triples, N-Quads or JSON-LD that does not parse
    │   ├── QueryError              SPARQL that does not parse, or is too large / deeply nested
    │   │   └── QueryRefusedError   a query refused by policy (update, SERVICE not allow-listed)
    │   ├── UnknownNameError        an unknown tool, identity, run, record kind, pack or query
    │   └── GraphCredentialsInClearError  a graph setting that would send a password or
    │                               token over plain http to another host
    ├── PolicyError                 a Cedar policy set that does not parse or validate
    ├── JournalError                the journal cannot be opened or written
    │   └── ChainBrokenError        the hash chain does not verify (names the first broken event)
    ├── GraphStoreError             the graph store cannot be opened or written
    │   ├── GraphBusyError          another process holds the graph store's lock
    │   ├── GraphUnreachableError   a remote graph store cannot be reached
    │   ├── GraphAuthError          a remote graph store refused the credentials (401/403)
    │   ├── GraphTimeoutError       a remote graph store did not answer in time
    │   ├── GraphResponseError      a remote graph store answered an error or garbage
    │   │   └── GraphAnswerTooLargeError  an answer past the bound it was read under
    │   └── GraphExportTooLargeError  an export past its bound in all
    ├── IdempotencyConflictError    one idempotency key reused for a different input
    ├── ToolError                   a tool raised, or returned output that breaks its contract
    │   ├── ToolUnavailableError    the tool cannot be reached now (retryable; nothing journaled)
    │   │   └── ToolChangedError    its definition changed since it was reviewed (not retryable)
    │   └── ToolRefused             a tool's typed refusal, raised before it wrote anything
    │                               (journaled ``failed`` with its code: no retry, no human task)
    ├── VerifierError               a verifier raised
    ├── ShapesError                 a shapes graph that cannot be loaded
    ├── OntologyError               the ontology cannot be checked
    │   ├── JavaMissingError        the OWL reasoner needs Java and there is none
    │   └── ReasonerTimeoutError    HermiT did not finish within the time limit
    ├── ApprovalError               an approval that cannot be given (self-approval, expired, ...)
    │   └── ApprovalUsedError       an approve-once whose action ran cannot be revoked
    │                               (HTTP 409, CLI exit 2)
    ├── ReplayDivergenceError       strict replay differs from the journal (names the event)
    │   └── PackVersionError        a run's recorded pack version is not installed, or its
    │                               files differ (names the pack, recorded and installed)
    ├── BudgetExceededError         a spending limit was reached (carries the reason code)
    ├── QuotaExceededError          an identity's quota over a sliding window is used up
    │                               (HTTP 429; carries when the window frees up)
    ├── WorkflowError               a workflow or step definition that cannot run
    │   ├── ModelError              the model server could not be reached or answered garbage
    │   │   └── ModelCredentialsInClearError  a model key over plain http off loopback
    │   ├── AutonomyError           an autonomy command that the step's policy refuses
    │   ├── RunEndedError           a workflow run that ended cannot be walked, answered or
    │   │   │                       cancelled (HTTP 409; carries how it ended)
    │   │   └── RunCancelledError   ... because a person cancelled it (names who and why)
    │   └── RunMovedError           another walk or answer moved a run's step first (HTTP 409)
    └── MissingExtraError           an integration whose optional dependencies are not installed

Messages follow Cedar's guide: lowercase, no final period, user values in backticks,
context chained with colons; hints are kept apart in ``hint``.
"""

from __future__ import annotations

import re


class CradleError(Exception):
    """Base class of every error cradle-kg raises on purpose."""

    #: a short, stable, machine-readable code (shown in JSON outputs)
    code: str = "cradle_error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, str]:
        out = {"error": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        return out


class InputError(CradleError):
    code = "input_error"


class InputTooLargeError(InputError):
    code = "input_too_large"


class ProposalError(InputError):
    code = "invalid_proposal"


class GraphCredentialsInClearError(InputError):
    """A remote graph store's setting that sends credentials over plain ``http://`` to a
    host that is not loopback, without the opt-in (``tests/security/test_372``)."""

    code = "graph_credentials_in_clear"


class RunOwnershipError(ProposalError):
    """A proposal names a run another agent started: refused before anything is journaled
    (a run's steps, approvals and trusted inputs are its agent's alone)."""

    code = "run_not_yours"


class TaskOwnershipError(RunOwnershipError):
    """A proposal names a task under a ``task`` limit that another agent used first:
    refused before anything is journaled (the task's budget is its agent's alone)."""

    code = "task_not_yours"


class TenantMismatchError(InputError):
    """A workflow names a tenant other than its agent's configured one: its start is
    refused, nothing journaled (``tests/security/test_406``)."""

    code = "tenant_mismatch"


class ManifestError(InputError):
    code = "invalid_manifest"


class LocatedError(InputError):
    """An input file that is wrong at a place: ``file`` and ``line`` say where, when known."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        where = file or "<input>"
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {message}", hint=hint)
        self.file = file
        self.line = line


class RdfParseError(LocatedError):
    """RDF that does not parse; ``file`` and ``line`` say where, when known."""

    code = "rdf_parse_error"


class ContractsError(LocatedError):
    """An MCP proxy's contracts file that does not load (``file:line: message``)."""

    code = "invalid_contracts"


class WorkflowFileError(LocatedError):
    """A workflow file that does not load; ``problems`` lists every ``FILE:LINE: message``."""

    code = "invalid_workflow"

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 problems: tuple[str, ...] = ()) -> None:
        super().__init__(message, file=file, line=line)
        self.problems = problems or (self.message,)


class QueryError(InputError):
    code = "invalid_query"


class QueryRefusedError(QueryError):
    """A well-formed query this endpoint will not run (update, a SERVICE not allow-listed)."""

    code = "query_refused"


class UnknownNameError(InputError):
    code = "unknown_name"


class PolicyError(CradleError):
    code = "policy_error"


class JournalError(CradleError):
    code = "journal_error"


class JournalOutcomeUnknown(JournalError):
    """An append whose session was lost while it ran (its COMMIT sent, its answer never
    read), and whose outcome could not be read back: it may or may not be in the journal.
    Never retried blindly (an intent written twice is an effect run twice): the caller
    reads the journal (``cradle-kg audit verify``, the run's events) before acting again."""

    code = "journal_outcome_unknown"


class ChainBrokenError(JournalError):
    code = "chain_broken"

    def __init__(self, message: str, *, seq: int, event_id: str | None) -> None:
        super().__init__(message)
        self.seq = seq
        self.event_id = event_id


class GraphStoreError(CradleError):
    code = "graph_store_error"


class ProjectionError(CradleError):
    """A pack projector raised or produced something that is not a triple (issue 14)."""

    code = "projection_error"


class GraphBusyError(GraphStoreError):
    code = "graph_busy"


class GraphUnreachableError(GraphStoreError):
    code = "graph_unreachable"


class GraphAuthError(GraphStoreError):
    code = "graph_auth_refused"


class GraphTimeoutError(GraphStoreError):
    code = "graph_timeout"


class GraphResponseError(GraphStoreError):
    code = "graph_bad_response"


class GraphAnswerTooLargeError(GraphResponseError):
    """An answer of the store past the bound it was read under."""


class GraphExportTooLargeError(GraphStoreError):
    """An export past its bound in all, whatever the number of graphs the store lists
    (``tests/security/test_359``)."""

    code = "graph_export_too_large"


class GraphWatermarkError(GraphStoreError):
    """The store's watermark names no event of this journal (ahead of its head): the
    store holds another journal's projection, or someone else wrote its meta graph."""

    code = "graph_watermark_ahead"


class GraphLayoutError(GraphStoreError):
    """The store was written with a projection layout newer than this code's."""

    code = "graph_layout_newer"


class IdempotencyConflictError(CradleError):
    code = "idempotency_conflict"


class ToolError(CradleError):
    code = "tool_error"


class ToolUnavailableError(ToolError):
    """The tool cannot be reached now (a proxied upstream that is gone): the call is refused
    before anything is journaled, and may be made again in ``retry_after`` seconds."""

    code = "tool_unavailable"

    def __init__(self, message: str, *, hint: str | None = None,
                 retry_after: float = 1.0) -> None:
        super().__init__(message, hint=hint)
        self.retry_after = retry_after

    #: whether the same call may be made again later (in ``retry_after`` seconds)
    retryable: bool = True


class ToolChangedError(ToolUnavailableError):
    """The tool's definition changed since it was reviewed (a proxied upstream that changed
    it while the proxy runs): the call is refused before anything is journaled, and is
    **not** retryable — it is not served again until the operator reviews the tool and
    restarts the proxy (``tests/security/test_614``)."""

    code = "tool_changed"
    retryable = False


#: what a refusal's code may be: a short, stable, machine-readable word an agent can act on
REFUSAL_CODE = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
#: how much of a refusal's message is journaled
REFUSAL_MESSAGE_CHARS = 500


class ToolRefused(ToolError):
    """A tool's typed refusal: *I wrote nothing, and here is why* (``code``, ``message``).

    Raised by a tool **before** it writes anything (a closed account, a limit of its own,
    a state that forbids the call). The gateway journals the call's observation with
    ``refusal: <code>`` and its outcome ``failed`` with the code and the message: the call
    is final for its idempotency key — never retried, its lookup never asked, no human
    task, no compensation (Temporal's non-retryable application error) — and the same key
    again answers the recorded refusal without calling the tool.

    The promise is the tool author's: a refusal raised *after* a write is not one (gate 2
    still reads the target back, and a read that finds the effect done escalates the call
    as an unknown outcome; a write the read cannot see, nothing here can detect). Any other
    exception stays an unknown outcome. ``code`` must match :data:`REFUSAL_CODE` (else
    :class:`ValueError`: a malformed refusal is an unknown outcome too)."""

    def __init__(self, code: str, message: str, *, hint: str | None = None) -> None:
        if not isinstance(code, str) or REFUSAL_CODE.fullmatch(code) is None:
            raise ValueError(f"a refusal's code is a short lowercase word "
                             f"(`{REFUSAL_CODE.pattern}`), not `{str(code)[:80]}`")
        super().__init__(str(message)[:REFUSAL_MESSAGE_CHARS], hint=hint)
        self.code = code


class VerifierError(CradleError):
    code = "verifier_error"


class ShapesError(CradleError):
    code = "shapes_error"


class OntologyError(CradleError):
    code = "ontology_error"


class JavaMissingError(OntologyError):
    code = "java_missing"


class ReasonerTimeoutError(OntologyError):
    """HermiT did not finish within the check's time limit (``tests/security/test_358``)."""

    code = "reasoner_timeout"


class ApprovalError(CradleError):
    code = "approval_error"


class ApprovalUsedError(ApprovalError):
    """An approve-once is taken back (``approvals revoke``) only before its action ran
    under it: this one's intent is in the journal, nothing is left to stop (HTTP 409, CLI
    exit 2). A reusable approval is revoked after its use too (``tests/security/
    test_316``)."""

    code = "already_used"


class ReplayDivergenceError(CradleError):
    code = "replay_divergence"

    def __init__(self, message: str, *, seq: int | None = None) -> None:
        super().__init__(message)
        self.seq = seq


class PackVersionError(ReplayDivergenceError):
    """Strict replay cannot run a run with the code that decided it: a pack version its
    decisions recorded is not installed, or is installed with other files (its digest
    differs). Names the pack, the version and digest recorded and what is installed; the
    run is refused before anything of it is replayed (``tests/security/test_554``,
    ``test_555``)."""

    code = "pack_version_unavailable"

    def __init__(self, message: str, *, pack: str, recorded: str,
                 installed: tuple[str, ...] = (), hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint
        #: the pack's id, its ``id@version (digest)`` recorded, and each installed one's
        self.pack, self.recorded, self.installed = pack, recorded, installed


class BudgetExceededError(CradleError):
    code = "budget_exceeded"

    def __init__(self, message: str, *, reason_code: str) -> None:
        super().__init__(message)
        self.reason_code = reason_code


class QuotaExceededError(CradleError):
    """An identity used up a quota (its evidence uploads of the last hour, its refused
    proposals, what waits for a person on its behalf); ``retry_after``: seconds until the
    window frees enough for the refused request (None: never, at this configuration)."""

    code = "quota_exceeded"

    def __init__(self, message: str, *, hint: str | None = None,
                 retry_after: int | None = None, quota: str | None = None,
                 identity: str | None = None, limit: int | None = None) -> None:
        super().__init__(message, hint=hint)
        self.retry_after = retry_after
        #: the quota's key in ``input_limits``, whom it throttled and its limit: what the
        #: journal's record of the refusal says (:mod:`cradle_kg.throttling`)
        self.quota = quota
        self.identity = identity
        self.limit = limit


class WorkflowError(CradleError):
    code = "workflow_error"


class ModelError(WorkflowError):
    code = "model_error"


class ModelCredentialsInClearError(ModelError):
    """A model server's key (``CRADLE_MODEL_API_KEY``, ``user:key@`` in its base URL) to
    be sent over plain ``http://`` to a host that is not loopback, without the opt-in
    ``CRADLE_MODEL_ALLOW_PLAIN_HTTP_CREDENTIALS=1`` (``tests/security/test_617``)."""

    code = "model_credentials_in_clear"


class AutonomyError(WorkflowError):
    """A refused autonomy command; ``reasons`` lists every unmet condition."""

    code = "autonomy_refused"

    def __init__(self, message: str, *, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = reasons


class RunEndedError(WorkflowError):
    """A workflow run that ended (``workflow.completed|failed``) is not walked on, its
    steps are not answered and it is not cancelled again; ``ended``: the kind of its end."""

    code = "run_ended"

    def __init__(self, message: str, *, run_id: str, ended: str,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.run_id = run_id
        self.ended = ended


class RunCancelledError(RunEndedError):
    """The run ended because a person cancelled it (``workflow cancel``): ``by``, ``reason``."""

    code = "run_cancelled"

    def __init__(self, message: str, *, run_id: str, by: str, reason: str) -> None:
        super().__init__(message, run_id=run_id, ended="workflow.failed",
                         hint="a cancelled run is not walked on; start a new run")
        self.by = by
        self.reason = reason


class RunMovedError(WorkflowError):
    """A walk of a workflow run found one of its steps moved by another walk or answer
    since it read the run (each step's events are written ``if_last``): nothing of this
    walk's step was written; the run is where the other left it."""

    code = "run_moved"


class MissingExtraError(CradleError):
    """An integration (MCP, LangGraph) whose optional dependency group is not installed."""

    code = "missing_extra"
