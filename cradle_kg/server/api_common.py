"""What every JSON API route shares: bearer authentication, typed refusals, bounded bodies.

``Who`` is any authenticated identity, ``Approver`` a configured approver (403 otherwise);
:func:`refuse` maps the one error tree onto HTTP (404 unknown, 403 approval refused, 413
too large, 422 malformed, 429 a quota used up, with ``Retry-After``, 400 otherwise);
:func:`read_body` stops at the byte limit before parsing anything, and :func:`json_body`
parses with the proposals' strict loader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ValidationError

from ..errors import (
    ApprovalError,
    ApprovalUsedError,
    CradleError,
    InputError,
    InputTooLargeError,
    QuotaExceededError,
    RunEndedError,
    RunMovedError,
    RunOwnershipError,
    UnknownNameError,
)
from ..evidence import HOST_COLLECTOR_PREFIX, evidence_for
from ..inputs import InputLimits, load_json
from ..loop.proposal import RUNTIME_RUNS, run_namespace_owner
from ..loop.runtime import Runtime, run_owner
from ..records import AuditEvent, Outcome
from ..runs import RunSummary
from .auth import Caller, authenticate
from .threads import IdentityThreads

T = TypeVar("T")
B = TypeVar("B", bound=BaseModel)
_BEARER = HTTPBearer(auto_error=False, description="a per-identity API token")


def status_of(exc: CradleError) -> int:
    if isinstance(exc, UnknownNameError):
        return 404
    if isinstance(exc, RunEndedError | RunMovedError | ApprovalUsedError):
        return 409  # the run ended (a cancel) or moved; the approval's action ran
    if isinstance(exc, ApprovalError | RunOwnershipError):  # not the caller's to do
        return 403
    if isinstance(exc, InputTooLargeError):
        return 413
    if isinstance(exc, InputError):  # a malformed or out-of-limits body or value
        return 422
    if isinstance(exc, QuotaExceededError):
        return 429
    return 400


def sees(who: Caller, requested_by: str) -> bool:
    """An approver sees every approval; an agent only those its own actions asked for (their
    actions' arguments are another agent's business: found by the gateway review)."""
    return who.is_approver or who.identity == requested_by


def evidence_reader(runtime: Runtime, who: Caller) -> Callable[[AuditEvent], bool] | None:
    """Which uploads of a blob ``who`` is told of (who added it, when, for which run and
    action): None — every one — for a person; for an agent's token or its host's, those
    it or its host added and those for a run of its namespace or one it reads
    (:func:`reads_run`). A blob's
    address is its content's hash: before, any token that held the bytes learned which
    other agent or host uploaded them, when, and for which run (``tests/security/
    test_338``)."""
    if who.is_approver:
        return None
    own = {who.identity, HOST_COLLECTOR_PREFIX + who.identity}
    runs: dict[str, bool] = {}

    def shown(event: AuditEvent) -> bool:
        if event.actor in own:
            return True
        run = evidence_for(event)
        if run is None:
            return False
        if run not in runs:  # its namespace's by the id's form, as an upload is bound
            runs[run] = (run_namespace_owner(run) == who.identity
                         or reads_run(runtime, who, run))
        return runs[run]
    return shown


def reads_run(runtime: Runtime, who: Caller, run_id: str) -> bool:
    """Whether ``who`` may read what a run's pages carry of its values — its ``why`` (its
    latest outcome's reasons, a waiting step's), its lanes (each proposal's target, every
    stage's reasons: an approver's rejection, a tool's error), its events' subjects and its
    proposals' ids: the approvers, and the run's own agent (its first proposal's or
    claim's, a workflow run's agent: one probe). Any token sees every run, its state and
    counts, and its events' kind, actor and time; before, another agent's token read those
    values too (``tests/security/test_173``) — and every blob's address, as the subjects of
    the ``evidence`` run, which it then cited (``test_185``).

    INVARIANT: the runtime's own runs (:data:`~cradle_kg.loop.proposal.RUNTIME_RUNS`) are
    the approvers' alone, whoever an older journal says claimed them: ``quotas`` was a run
    name like any other before this round, and an agent that had claimed it read every
    identity's quota records there (``tests/security/test_241``)."""
    if run_id in RUNTIME_RUNS:
        return who.is_approver
    if who.is_approver:
        return True
    # INVARIANT: a run of an identity's namespace is read by that identity alone, and only
    # when the journal agrees it is theirs: one another identity claimed before the
    # namespace held for undeclared ids (an older journal) is the approvers' alone
    # (tests/security/test_259)
    namespace = run_namespace_owner(run_id)
    if namespace is not None and namespace != who.identity:
        return False
    return run_owner(runtime.journal, run_id) == who.identity


def shown_summary(runtime: Runtime, who: Caller, summary: RunSummary, *,
                  reader: bool | None = None) -> dict[str, Any]:
    """A run's summary as ``who`` may read it: ``why``, ``proposals`` and ``outcomes``
    empty and the last outcome's proposal id left out unless :func:`reads_run` (``reader``:
    already asked)."""
    out = summary.to_dict()
    if not (reads_run(runtime, who, summary.run_id) if reader is None else reader):
        out |= {"why": [], "proposals": [], "outcomes": {}}
        last = out.get("last_outcome")
        if isinstance(last, dict):
            out["last_outcome"] = {**last, "proposal_id": None}
    return out


def refuse(exc: CradleError) -> HTTPException:
    wait = exc.retry_after if isinstance(exc, QuotaExceededError) else None
    return HTTPException(status_of(exc), detail=exc.to_dict(),
                         headers={"Retry-After": str(wait)} if wait is not None else None)


async def read_body(request: Request, limits: InputLimits) -> bytes:
    """The request body, refused (413) as soon as it passes ``max_bytes`` — before it is
    all read, and before it is parsed."""
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limits.max_bytes:
            raise refuse(InputTooLargeError(f"`request body`: more than the limit of "
                                             f"{limits.max_bytes} bytes"))
    return bytes(data)


async def json_body(request: Request, limits: InputLimits, model: type[B]) -> B | None:
    """An approver's JSON body, through the same strict loader as proposals."""
    data = await read_body(request, limits)
    if not data.strip():
        return None
    try:
        return model.model_validate(load_json(data, limits=limits, source="request body"))
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        loc = ".".join(str(x) for x in first["loc"]) or "(body)"
        raise refuse(InputError(f"`{loc}`: {first['msg'].lower()}")) from None
    except CradleError as exc:
        raise refuse(exc) from None


def outcome_dict(outcome: Outcome | None) -> dict[str, Any] | None:
    return outcome.model_dump(mode="json") if outcome is not None else None


def _unauthenticated() -> HTTPException:
    return HTTPException(401, detail={"error": "unauthenticated",
                                      "message": "a valid bearer token is required"},
                         headers={"WWW-Authenticate": "Bearer"})


def _authenticated(runtime: Runtime, token: str) -> Caller | None:
    """Who ``token`` is now: the approvers and agents the home's files declare now, the
    token file read now."""
    return authenticate(runtime.home, runtime.config, token, runtime.approvals.approvers(),
                        runtime.declared_agents())


def _caller(request: Request,
            creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]) -> Caller:
    runtime: Runtime = request.app.state.runtime
    # INVARIANT: a request acts under what the home's files say now, at every door — not
    # only a decision's: a limit narrowed in config.json held a run an agent's token
    # started, or an upload, to the old one until the next proposal (test_210)
    runtime.refresh()
    who = _authenticated(runtime, creds.credentials if creds else "")
    if who is None:
        raise _unauthenticated()
    return who


class CallerThreads:
    """Each caller's blocking calls on its identity's own threads (:class:`~.threads.
    IdentityThreads`), each checked, on its thread and before it does anything, to be the
    call of a token that still authenticates its caller.

    INVARIANT: a call that waited for a thread runs only while its token holds. It was
    authenticated when it arrived; before, a token revoked (``api-token revoke``) or
    replaced (``api-token issue``) while 64 of its calls waited behind 8 slow ones did not
    stop them: each was journaled and run under its agent's name once a thread was free
    (``tests/security/test_500``; ``test_229`` for a call waiting on an approval)."""

    def __init__(self, runtime: Runtime, threads: IdentityThreads | None = None) -> None:
        self.runtime = runtime
        self.threads = threads if threads is not None else IdentityThreads(refuse=refuse)

    async def run(self, who: Caller, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a thread of ``who``'s identity, refused (401) when its token no
        longer authenticates it as it did, with the same roles."""
        def checked() -> T:
            if _authenticated(self.runtime, who.token) != who:
                raise _unauthenticated()
            return fn(*args)
        return await self.threads.run(who.identity, checked)


Who = Annotated[Caller, Depends(_caller)]


def _approver(who: Who) -> Caller:
    if not who.is_approver:
        raise HTTPException(403, detail={"error": "forbidden", "message":
                                         f"`{who.identity}` is not a configured approver"})
    return who


Approver = Annotated[Caller, Depends(_approver)]
