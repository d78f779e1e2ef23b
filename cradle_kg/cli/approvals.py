"""``cradle-kg approvals``: list, show, approve, reject, request changes, revoke.

The approver authenticates with a token: ``--token`` or, better, ``$CRADLE_APPROVER_TOKEN``
(so it does not land in the shell history).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..canonical import parse_iso
from ..errors import ApprovalError, CradleError, InputError
from ..inbox import approval_list
from ..loop.approvals import ApprovalState, ToolVersions, effective_status, shown_now
from ..records import ApprovalStatus
from .common import (
    Format,
    FormatOpt,
    HomeOpt,
    clean,
    console,
    err_console,
    fail,
    print_json,
    table,
)
from .core import open_runtime

if TYPE_CHECKING:
    from ..loop.runtime import Runtime

approvals_app = typer.Typer(help="Human approvals: list, show, decide.", no_args_is_help=True)

TokenOpt = Annotated[str | None, typer.Option(
    "--token", envvar="CRADLE_APPROVER_TOKEN", help="The approver's token.", show_default=False)]
AsOpt = Annotated[str, typer.Option("--as", help="The approving identity.")]


def check_person(rt: Runtime, by: str, token: str | None) -> None:
    """``--as by`` on a command that records something under ``by``'s name: when ``by`` is
    an approver of the home (a person), only with their token, checked as an approval's —
    missing or wrong, one ``error:`` line and exit 1, before anything is written. Any other
    name (an agent, whose word is no person's; a customer the host speaks for, no identity
    of the home) is taken as before. ``evidence add --as`` (``tests/security/test_183``) and
    ``input --as`` (``test_195``) share this."""
    if rt.config.approver(by) is None:
        return
    if not token:
        fail(InputError(f"`--as {by}` needs the approver's token",
                        hint="pass --token or set CRADLE_APPROVER_TOKEN"), code=1)
    try:
        rt.approvals.authenticate(by, token)
    except CradleError as exc:
        fail(exc, code=1)


def check_approver(rt: Runtime, by: str, token: str | None) -> None:
    """``--as by`` on a command only a person of the home gives (``budgets set``,
    ``autonomy propose|shadow|promote|halt``): ``by`` is an approver of the home, and their
    token goes with it (:func:`check_person`) — else one ``error:`` line and exit 1, before
    anything is written. Before, these journaled whatever name ``--as`` said, a person's
    or no one's, as the one who acted (``tests/security/test_337``)."""
    if rt.config.approver(by) is None:
        fail(ApprovalError(f"`--as {by}`: not an approver of this home",
                           hint="name one of the home's approvers, with their token"), code=1)
    check_person(rt, by, token)


@approvals_app.command("list")
def approvals_list(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
                   pending: Annotated[bool, typer.Option(help="Only pending ones.")] = False,
                   limit: Annotated[int, typer.Option(
                       min=1, help="How many approvals to show (oldest first).")] = 100,
                   offset: Annotated[int, typer.Option(
                       min=0, help="How many of the oldest approvals to skip.")] = 0,
                   decider: Annotated[str | None, typer.Option(
                       "--as", help="An approver: --pending leaves out what they may not "
                                    "decide; each approval says whether they may.",
                       show_default=False)] = None,
                   ) -> None:
    """List approvals (newest last), one page at a time; an approval past its expiry reads
    `expired`. ``--as`` an approver: the pending ones they are excluded from deciding (their
    own agent's) are left out, as from their inbox, and each approval listed says whether
    it is theirs to decide (``decidable``, ``why_not``)."""
    with open_runtime(home, reading=True) as rt:
        if decider is not None and rt.config.approver(decider) is None:
            fail(InputError(f"`--as {decider}`: not an approver of this home"))
        # one page: of the approvals no one decided yet (test_100), filtered in the query
        # for an approver (test_253); or of all asked for, the page's digests folded
        rows, total = approval_list(rt, pending=pending, limit=limit, offset=offset,
                                    decider=decider)
        # as an approval's use reads it: on the server's clock too (test_624)
        now = shown_now(rt.journal, rt.clock(), (s.approval for s, _ in rows))
        # the tool's version each covers, and the one now (as `approvals show` says it)
        items = [(s, effective_status(s.approval, now), rt.requested_tool(s.approval),
                  why) for s, why in rows]
    if fmt is Format.JSON:
        print_json([{**st.approval.model_dump(mode="json"), "status": status.value,
                     "tool": tool.to_dict(), **st.shown(),
                     **({"decidable": why is None, "why_not": why} if decider else {})}
                    for st, status, tool, why in items])
        return
    table("approvals", ["id", "status", "run", "proposal", "tool", "requested by", "approver",
                        "scope", "expires", *(["decidable"] if decider else [])],
          [[st.approval.id, status.value, st.approval.run_id, st.approval.proposal_id,
            _tool_cell(tool), st.approval.requested_by, _approver_cell(st),
            st.approval.scope or "-",
            st.approval.expires_at.isoformat() if st.approval.expires_at else "-",
            *([f"no: {why}" if why else "yes"] if decider else [])]
           for st, status, tool, why in items])
    if offset + len(items) < total:
        err_console.print(f"{offset + 1} to {offset + len(items)} of {total} approvals; "
                          f"more with --offset {offset + len(items)}", highlight=False)


def _approver_cell(st: ApprovalState) -> str:
    """Who approved it, and who took it back, when and why (a revoked approval)."""
    given = st.approval.approver_id or "-"
    if st.revoked is None:
        return given
    why = f": {st.revoked.reason}" if st.revoked.reason else ""
    return (f"{given}, revoked by {st.revoked.by} at {st.revoked.at.isoformat()}"
            f"{st.revoked.said()}{why}")


def _tool_cell(tool: ToolVersions) -> str:
    """The version an approval was asked under, and the one now when the tool changed
    since (approving covers only the version asked under)."""
    if tool.asked is None:
        return "-"
    return f"{tool.asked} (now {tool.now})" if tool.changed else tool.asked


@approvals_app.command("show")
def approvals_show(approval_id: str, home: HomeOpt = None,
                   viewer: Annotated[str | None, typer.Option(
                       "--as", help="The approver looking (needs their token); the view is "
                                    "journaled under them.", show_default=False)] = None,
                   token: TokenOpt = None) -> None:
    """Show one approval, the exact action it is bound to and the tool's version it covers.

    ``tool``: the version it was asked under (``asked``) and the one registered now
    (``now``); when they differ (``changed``), approving covers only the version asked
    under and the action will ask a person again (a warning on stderr says so).

    With ``--as X`` (and X's token) the view is journaled as ``approval.viewed`` by X —
    X's first look, and X's first after the approval moved on (decided, refused, ...);
    looking again in between is not journaled again. Without ``--as`` nothing is
    journaled. A wrong or missing token is refused (exit 1).
    """
    if viewer is not None and not token:
        fail(InputError(f"`--as {viewer}` needs the approver's token",
                        hint="pass --token or set CRADLE_APPROVER_TOKEN"))
    with open_runtime(home, reading=viewer is None) as rt:  # a view `--as` is journaled
        try:
            if viewer is not None:
                assert token is not None
                rt.approvals.authenticate(viewer, token)
                rt.view_approval(approval_id, viewer=viewer)
            state = rt.approvals.get(approval_id)
            approval = state.approval
            proposal, shown = rt.approvals.shown_request(approval)
            tool = rt.approval_tool(approval, proposal.action.action_type)
            now = shown_now(rt.journal, rt.clock(), [approval])  # (test_624)
        except CradleError as exc:
            fail(exc, code=1 if exc.code == "approval_error" else 2)
    print_json({"approval": state.record(now),
                "action": shown,
                "proposed_by": proposal.agent_id,
                "tool": tool.to_dict(),
                "evidence": list(proposal.evidence_items), **state.shown()})
    note = tool.note()
    if note:  # on stderr too: the JSON on stdout stays what a script reads
        err_console.print(f"warning: {clean(note)}", highlight=False, soft_wrap=True)


def _decide(approval_id: str, home: Path | None, approver: str, token: str | None,
            status: ApprovalStatus, *, once: bool = True, scope: str | None = None,
            until: datetime | None = None, reason: str | None = None) -> None:
    if not token:
        fail(InputError("an approver token is required",
                        hint="pass --token or set CRADLE_APPROVER_TOKEN"))
    with open_runtime(home) as rt:
        try:
            approval, outcome = rt.decide_approval(
                approval_id, approver_id=approver, token=token, status=status, once=once,
                scope=scope, until=until, reason=reason)
            # a stale approval can be decided; it covers nothing under the version now
            tool = rt.requested_tool(approval)
        except CradleError as exc:
            fail(exc, code=1 if exc.code == "approval_error" else 2)
        from ..workflow.runner import after_approval  # a workflow walks on by itself

        try:
            walked = after_approval(rt, approval.run_id,
                                    base_url=os.environ.get("CRADLE_MODEL_BASE_URL"),
                                    api_key=os.environ.get("CRADLE_MODEL_API_KEY"))
        except CradleError as exc:
            fail(exc)
    console.print(f"approval {clean(approval.id)}: {approval.status.value} by "
                  f"{clean(approval.approver_id)}"
                  + (f" (for `{clean(tool.asked)}`)" if tool.asked else ""), highlight=False)
    note = tool.note()
    if note:
        console.print(f"warning: {clean(note)}", highlight=False, soft_wrap=True)
    if outcome is not None:
        console.print(f"run {clean(outcome.run_id)} continued: {outcome.status.value}",
                      highlight=False)
    if walked is not None and "error" in walked:  # the decision stands: said, then why not
        error = walked["error"]
        err_console.print(
            f"warning: workflow run {clean(walked['run_id'])} did not continue: "
            f"{clean(error.get('message', ''))}"
            + (f" ({clean(error['hint'])})" if error.get("hint") else "")
            + f"; then `cradle-kg workflow resume {clean(walked['run_id'])}`",
            highlight=False, soft_wrap=True)
    elif walked is not None:
        console.print(f"workflow run {clean(walked['run_id'])}: {clean(walked['status'])}",
                      highlight=False)


def _until(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return parse_iso(text)
    except ValueError:
        fail(InputError(f"`--until`: not an ISO-8601 time: `{text}`"))


@approvals_app.command("approve")
def approvals_approve(
    approval_id: str, approver: AsOpt, home: HomeOpt = None, token: TokenOpt = None,
    once: Annotated[bool, typer.Option("--once", help="Valid for one execution.")] = False,
    scope: Annotated[str | None, typer.Option("--scope", help="Approve within a scope.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Expiry, ISO-8601.")] = None,
) -> None:
    """Approve the exact action; the waiting run continues by itself.

    Without --scope or --until an approval is single-use (--once is the default).
    """
    single = once or (scope is None and until is None)
    _decide(approval_id, home, approver, token, ApprovalStatus.APPROVED, once=single,
            scope=scope, until=_until(until))


@approvals_app.command("reject")
def approvals_reject(approval_id: str, approver: AsOpt,
                     reason: Annotated[str, typer.Option("--reason")],
                     home: HomeOpt = None, token: TokenOpt = None) -> None:
    """Reject the action, with a reason."""
    _decide(approval_id, home, approver, token, ApprovalStatus.REJECTED, reason=reason)


@approvals_app.command("request-changes")
def approvals_request_changes(approval_id: str, approver: AsOpt,
                              reason: Annotated[str, typer.Option("--reason")],
                              home: HomeOpt = None, token: TokenOpt = None) -> None:
    """Send the proposal back with the changes wanted."""
    _decide(approval_id, home, approver, token, ApprovalStatus.CHANGES_REQUESTED, reason=reason)


@approvals_app.command("revoke")
def approvals_revoke(approval_id: str, approver: AsOpt,
                     reason: Annotated[str, typer.Option("--reason", help="Why it is taken "
                                                                          "back.")],
                     home: HomeOpt = None, token: TokenOpt = None) -> None:
    """Take an approved approval back: it then authorizes nothing more, and the agent's
    proposal asks a person anew. Only an approver who may decide it. A reusable approval
    (--scope, --until) can be revoked after its use too: what ran under it stays
    authorized, its further uses stop. An approve-once whose action ran is `already_used`
    (exit 2): nothing is left to stop."""
    if not token:
        fail(InputError("an approver token is required",
                        hint="pass --token or set CRADLE_APPROVER_TOKEN"))
    with open_runtime(home) as rt:
        try:
            rt.revoke_approval(approval_id, approver_id=approver, token=token, reason=reason)
            state = rt.approvals.get(approval_id)
        except CradleError as exc:
            fail(exc, code=1 if exc.code == "approval_error" else 2)
    assert state.revoked is not None
    console.print(f"approval {clean(approval_id)}: revoked by {clean(state.revoked.by)} "
                  f"(approved by {clean(state.approval.approver_id or '-')})"
                  f"{state.revoked.said()}; it authorizes nothing "
                  + ("more" if state.revoked.used else "now"), highlight=False)


def install(app: typer.Typer) -> None:
    app.add_typer(approvals_app, name="approvals")
