"""``cradle-kg inbox`` (everything that waits for a person) and ``cradle-kg evidence``.

Exit codes: 0 done; 1 ``evidence show`` found a blob that no longer matches its hash
(it was edited); 2 the input could not be read or taken (no such file or blob, too large,
an identity the home does not know, past the identity's hourly upload quota).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import CradleError, InputError, JournalError
from ..evidence import MAX_EVIDENCE_BYTES, evidence_record, recorded_size, upload
from ..inbox import MAX_INBOX_PAGE, InboxItem, inbox, inbox_size, parse_kinds
from ..inputs import MAX_PAGE_INTEGER
from .approvals import TokenOpt, check_person
from .common import (
    Format,
    FormatOpt,
    HomeOpt,
    clean,
    console,
    err_console,
    fail,
    print_json,
    read_input,
    table,
)
from .core import open_runtime

evidence_app = typer.Typer(help="Content-addressed evidence: add, show.", no_args_is_help=True)


def inbox_command(
    home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
    kind: Annotated[list[str] | None, typer.Option(
        "--kind", help="approval, task or step (repeat; default: all three).")] = None,
    run: Annotated[str | None, typer.Option("--run", help="One run only.")] = None,
    limit: Annotated[int, typer.Option(
        min=1, max=MAX_INBOX_PAGE, help="How many items to show (oldest first).")] = 100,
    offset: Annotated[int, typer.Option(
        min=0, max=MAX_PAGE_INTEGER, help="How many of the oldest items to skip.")] = 0,
    decider: Annotated[str | None, typer.Option(
        "--as", help="An approver: only what they may decide (their scopes).",
        show_default=False)] = None,
) -> None:
    """What waits for a person: approvals, human tasks, human workflow steps (oldest first),
    one page at a time. Each approval says the tool version it covers; one whose tool
    changed since it was asked for says so first (approving it covers only that version).
    ``--as`` an approver limited to scopes: only the items asked within one of them."""
    with open_runtime(home, reading=True) as rt:
        if decider is not None and rt.config.approver(decider) is None:
            fail(InputError(f"`--as {decider}`: not an approver of this home"))
        try:
            kinds = parse_kinds(kind or ())
            items = inbox(rt, kinds=kinds, run_id=run, limit=limit, offset=offset,
                          decider=decider)
            total = inbox_size(rt, kinds=kinds, run_id=run, decider=decider)
        except CradleError as exc:
            fail(exc)
    if fmt is Format.JSON:
        print_json([i.to_dict() for i in items])
        return
    table("inbox", ["kind", "id", "run", "what", "why", "answer with"],
          [[i.kind, i.id, i.run_id, (i.question or i.title) + _tool_of(i),
            "; ".join(_warning(i) + i.reasons + [f"policy {p}" for p in i.policies]) or "-",
            i.command]
           for i in items])
    if offset + len(items) < total:
        err_console.print(f"{offset + 1} to {offset + len(items)} of {total} items; more "
                          f"with --offset {offset + len(items)}", highlight=False)


def _tool_of(item: InboxItem) -> str:
    """An approval's tool version, as the table shows it after what it is about."""
    asked = (item.tool or {}).get("asked")
    return f" (tool {asked})" if asked else ""


def _warning(item: InboxItem) -> list[str]:
    """An approval whose tool changed since it was asked: said first, before its reasons."""
    note = (item.tool or {}).get("note")
    return [f"WARNING: {note}"] if note else []


@evidence_app.command("add")
def evidence_add(
    file: Annotated[str, typer.Argument(help="The file to store (at most 1 MiB), "
                                                "or - for stdin.")],
    by: Annotated[str, typer.Option("--as", help="Who adds it (an agent or an approver of "
                                                 "the home; journaled).")],
    kind: Annotated[str, typer.Option("--kind", help="What it is, e.g. invoice.")] = "document",
    source: Annotated[str | None, typer.Option("--source", help="Where it comes from.")] = None,
    home: HomeOpt = None, fmt: FormatOpt = Format.TABLE, token: TokenOpt = None,
    run: Annotated[str | None, typer.Option(
        "--run", help="The run it is evidence for, alone (default: any run).",
        show_default=False)] = None,
    action: Annotated[str | None, typer.Option(
        "--action", help="The action it is evidence for, alone: the idempotency key the "
        "agent pins on it (default: any action).", show_default=False)] = None,
) -> None:
    """Store a file under its sha256 and print the address to cite in a proposal (within
    the identity's hourly upload quota: `input_limits.evidence_uploads_per_hour` and
    `evidence_bytes_per_hour`). As an approver, with their token: a person's upload is
    evidence for an agent's proposal, an agent's is not."""
    try:  # a regular file, or stdin for `-`: never a FIFO waited on (tests/security/test_281)
        data = read_input(file, MAX_EVIDENCE_BYTES)
    except CradleError as exc:
        fail(exc)
    with open_runtime(home) as rt:
        if rt.config.agent(by) is None and rt.config.approver(by) is None:
            fail(InputError(f"`{by}` is not an identity of this home",
                            hint="an agent or an approver of the home's config"))
        # INVARIANT: a person's upload is evidence, so it is theirs only with their token,
        # as an approval is (before, `--as user:bob` alone: tests/security/test_183)
        check_person(rt, by, token)
        try:  # the identity's upload quotas hold here as over HTTP (the README says why)
            ref = upload(rt.context, rt.evidence, data, kind=kind, source=source, by=by,
                         for_run=run, for_action=action)
        except CradleError as exc:
            fail(exc)
    if fmt is Format.JSON:
        print_json({"ref": ref, "bytes": len(data), "kind": kind, "source": source, "by": by,
                    "run": run, "action": action})
        return
    console.print(ref, highlight=False, soft_wrap=True)


@evidence_app.command("show")
def evidence_show(
    ref: Annotated[str, typer.Argument(help="The content address, sha256:<hex>.")],
    home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
    raw: Annotated[bool, typer.Option("--raw", help="Write the bytes themselves to stdout.")
                   ] = False,
) -> None:
    """Re-hash a blob and say who added it and when; exit 1 when it was edited."""
    with open_runtime(home, reading=True) as rt:
        record = evidence_record(rt.journal, ref)
        try:  # re-hashed in chunks; the bytes read whole for --raw alone, once found
            # intact and within the size found (tests/security/test_360)
            size = rt.evidence.verify(ref, size=recorded_size(record))
            data = rt.evidence.get(ref, max_bytes=size) if raw else b""
        except JournalError as exc:
            fail(exc, code=1)
        except CradleError as exc:
            fail(exc)
        record = {**record, "bytes": size, "intact": True}
    if raw:
        sys.stdout.buffer.write(data)
        return
    if fmt is Format.JSON:
        print_json(record)
        return
    # the size the re-hash found: no bytes are read without --raw (tests/security/test_446)
    console.print(f"{clean(ref)}: {size} bytes, intact", highlight=False, soft_wrap=True)
    table("added", ["by", "at", "kind", "source", "for run", "for action"],
          [[a["by"], a["at"], a["kind"] or "-", a["source"] or "-", a["for_run"] or "any",
            a["for_action"] or "any"]
           for a in record["added"]])  # type: ignore[attr-defined]
    if record["more"]:
        console.print("added more often: the first time and the newest shown",
                      highlight=False)


def install(app: typer.Typer) -> None:
    app.command("inbox")(inbox_command)
    app.add_typer(evidence_app, name="evidence")
