"""Core commands: demo, submit, schema, audit verify|anchor, tools list, runs list/show/resume."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import CradleError, UnknownNameError
from ..home import Home, resolve_home
from ..records import SCHEMAS, OutcomeStatus
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

if TYPE_CHECKING:  # imported where used: `schema` and `--help` need none of them
    from ..loop.gate1.findings import DomainValidator
    from ..loop.gate2 import DomainInvariant
    from ..loop.runtime import Runtime
    from ..storage import Anchor, ChainReport, Journal
    from ..tools import LookupFunction, ToolFunction, ToolRegistry, ToolSpec
    from ..verifiers import VerifierFunction

audit_app = typer.Typer(help="Check the journal's integrity.", no_args_is_help=True)
tools_app = typer.Typer(help="Registered tools and their contracts.", no_args_is_help=True)
runs_app = typer.Typer(help="Runs: list, show, resume.", no_args_is_help=True)


def open_runtime(home: Path | None, *, reading: bool = False) -> Runtime:
    """The home's runtime, or one error line; ``reading``: a command that only reads opens
    it read only (:func:`.loop.runtime.open_home`) — no journal made, switched to WAL,
    upgraded or written, no lease, no recovery pass, no graph store (``tests/security/
    test_301``, ``test_309`` … ``test_311``)."""
    try:
        return home_runtime(resolve_home(home), read_only=reading)
    except CradleError as exc:
        fail(exc)


def home_runtime(root: Path, *, journal: str | Path | None = None, graph_sync: bool = True,
                 recover: bool = True, read_only: bool = False) -> Runtime:
    """A runtime on the home at ``root``, or the error opening it raises — never with the
    home's journal created by a home that does not load (:func:`.loop.runtime.open_home`:
    ``tests/security/test_282``, ``test_298``)."""
    from ..loop.runtime import open_home  # the whole loop: only for commands that run it

    return open_home(root, journal=journal, graph_sync=graph_sync, recover=recover,
                     read_only=read_only)


def open_journal(home: Path | None) -> Journal:
    from ..storage import open_home_journal

    try:
        return open_home_journal(resolve_home(home), must_exist=True)
    except CradleError as exc:
        fail(exc)


def demo(home: HomeOpt = None) -> None:
    """Run the end-to-end demo on the embedded default (SQLite journal + graph store)."""
    from ..demo.scenario import DEMO_TOKENS, PILOTS, run_demo

    root = resolve_home(home)
    try:
        steps = run_demo(root, pilots=True)
    except CradleError as exc:
        fail(exc)
    rows = []
    for step in steps:
        o = step.outcome
        rows.append(["ok" if step.ok else "UNEXPECTED", step.name,
                     o.status.value + (" (replayed)" if o.replayed else ""), step.note])
    table(f"cradle-kg demo - home {root}", ["", "step", "outcome", "why"], rows)
    with open_journal(root) as journal:
        report = journal.verify()
    console.print(f"journal: {report.events} events, head {report.head_hash[:23]}..., "
                  f"chain {'intact' if report.intact else 'BROKEN'}", highlight=False)
    console.print(f"demo approver tokens (demo only): {DEMO_TOKENS}", highlight=False)
    packs = " ".join(f"--pack {p}" for p in PILOTS)
    console.print(f"next: cradle-kg audit verify --home {root}  |  "
                  f"cradle-kg runs list --home {root}  |  "
                  f"cradle-kg validate --all {packs} --home {root}", highlight=False)
    if not all(s.ok for s in steps) or not report.intact:
        raise typer.Exit(1)


def submit(
    proposal_file: Annotated[str, typer.Argument(help="Proposal JSON file, or - for stdin.")],
    home: HomeOpt = None,
) -> None:
    """Submit one proposal; print the outcome as JSON.

    Exit 0 executed and verified; 1 denied, needs clarification, awaiting approval or
    failed verification; 2 the input could not be read.
    """
    try:
        from ..config import load_config
        from ..loop.proposal import (
            check_agent_proposal,
            check_run_namespace,
            parse_proposal,
            read_proposal,
        )

        limits = load_config(Home(resolve_home(home)).config).input_limits
        raw = read_proposal(read_input(proposal_file, limits.max_bytes), limits,
                            source="stdin" if proposal_file == "-" else proposal_file)
        # checked before the home is opened: a proposal that cannot be submitted leaves
        # no trace (not even the empty journal a first command would create)
        proposal = check_agent_proposal(parse_proposal(raw, limits))
        check_run_namespace(proposal.effective_run_id, proposal.agent_id)  # test_282
    except CradleError as exc:
        fail(exc)
    with open_runtime(home) as rt:
        try:
            # the file speaks for its agent: a task a `task` limit counts is refused when
            # another agent's, claimed when nobody's (tests/security/test_377)
            outcome = rt.submit(proposal, task_for=proposal.agent_id)
        except CradleError as exc:
            fail(exc)
    print_json(outcome.model_dump(mode="json"))
    raise typer.Exit(0 if outcome.status is OutcomeStatus.EXECUTED else 1)


def schema(name: Annotated[str, typer.Argument(help="Record name, e.g. Proposal.")] = "",
           list_names: Annotated[bool, typer.Option("--list", help="List the names.")] = False,
           home: HomeOpt = None) -> None:
    """Print the JSON Schema of a record (Proposal, Decision, Verification, ...).

    Schemas are the same for every home; ``--home`` is accepted like everywhere else.
    """
    if list_names or not name:  # plain identifiers: no console needed
        sys.stdout.write("".join(f"{key}\n" for key in sorted(SCHEMAS)))
        return
    model = SCHEMAS.get(name)
    if model is None:
        fail(UnknownNameError(f"no record named `{name}`",
                              hint="`cradle-kg schema --list` lists them"))
    print_json(model.model_json_schema())


AnchorOpt = Annotated[
    str | None,
    typer.Option("--anchor", help="A head kept elsewhere (`seq:sha256:<hex>` or "
                 "`sha256:<hex>`, from `audit anchor`): fail unless the journal contains it.",
                 show_default=False),
]


def _verify_report(home: Path | None, anchor: Anchor | None,
                   semantics: bool = False) -> tuple[str, ChainReport]:
    """Verify read only — the chain, then the evidence blobs it cites
    (:func:`_blobs_report`); a progress bar on stderr when it is a terminal."""
    from ..storage import home_journal_target, verify_target

    try:
        root = resolve_home(home)
        path = home_journal_target(root)
    except CradleError as exc:
        fail(exc)
    if not err_console.is_terminal:
        report = verify_target(path, anchor=anchor, semantics=semantics)
        return path, _blobs_report(root, report, None)
    from rich.progress import Progress

    with Progress(console=err_console.real, transient=True) as bar:
        task = bar.add_task("verifying the journal", total=None)

        def show(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        report = verify_target(path, anchor=anchor, progress=show, semantics=semantics)
        blobs = bar.add_task("re-hashing the evidence blobs", total=None)
        return path, _blobs_report(root, report,
                                   lambda done: bar.update(blobs, completed=done))


def _blobs_report(root: Path, report: ChainReport,
                  progress: Callable[[int], None] | None) -> ChainReport:
    """``report``, broken when a blob of the home's evidence store does not hash to its
    name: the journal cites blobs (policy texts, recorded requests, uploads) by hash, and
    an edited one was caught only where it was read (``tests/security/test_122``)."""
    if not report.intact:
        return report
    from ..evidence import EvidenceStore

    store = EvidenceStore(Home(root).evidence)
    try:
        edited = store.edited(progress=progress)
    except OSError as exc:
        return replace(report, intact=False,
                       reason=f"the evidence store `{store.root}` cannot be read: {exc}")
    if edited is None:
        return report
    ref, file = edited
    return replace(report, intact=False,
                   reason=f"evidence `{ref}` does not match its hash: the blob was edited "
                          f"(`{file}`)")


def _print_broken(report: ChainReport) -> None:
    # the id and the reason quote what the broken journal holds (an edited event id, a
    # head's seq of any type): shown as they are, never read as markup
    # (``tests/security/test_74``)
    where = "" if report.broken_seq is None else f" at seq {clean(report.broken_seq)}"
    event = "" if report.broken_id is None else f" (event `{clean(report.broken_id)}`)"
    console.print(f"BROKEN{where}{event}: {clean(report.reason)}", highlight=False,
                  soft_wrap=True)


@audit_app.command("verify")
def audit_verify(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
                 anchor: AnchorOpt = None,
                 semantics: Annotated[bool, typer.Option(
                     "--semantics", help="Also check what the events mean: an action "
                     "settled once, its intent first, allowed, approved when it had to be "
                     "(exit 1 names the first event that breaks one).")] = False) -> None:
    """Recompute the hash chain, read only; exit 1 names what is broken, 0 when intact.

    A missing or empty journal, a missing genesis event or head, and an ``--anchor`` the
    journal does not contain count as broken. ``--semantics`` also checks the invariants
    every journal the runtime writes holds.
    """
    try:
        from ..storage import Anchor

        wanted = Anchor.parse(anchor) if anchor is not None else None
    except CradleError as exc:
        fail(exc)
    from ..storage import redact

    path, report = _verify_report(home, wanted, semantics)
    if fmt is Format.JSON:
        print_json({"journal": redact(path), "intact": report.intact,
                    "events": report.events, "head_hash": report.head_hash,
                    "broken_seq": report.broken_seq,
                    "broken_event": report.broken_id, "reason": report.reason,
                    "invariant": report.invariant,
                    "anchor": str(wanted) if wanted else None})
    elif report.intact:
        console.print(f"intact: {report.events} events, head {report.head_hash}"
                      + (f", contains anchor {wanted}" if wanted else ""), highlight=False,
                      soft_wrap=True)
    else:
        _print_broken(report)
    if fmt is not Format.JSON and (elsewhere := _journal_elsewhere(home, path)):
        console.print(elsewhere, highlight=False, soft_wrap=True)
    raise typer.Exit(0 if report.intact else 1)


def _journal_elsewhere(home: Path | None, target: str) -> str | None:
    """What to say when the journal verified is not the home's own file: a home's
    ``config.json`` (or the environment) named another, and the verdict is about that one
    (``tests/security/test_295``)."""
    import os

    from ..storage import JOURNAL_URL_ENV, is_postgres, redact

    root = resolve_home(home)
    own = Home(root).journal
    if not is_postgres(target) and Path(target).resolve() == own.resolve():
        return None
    named = f"${JOURNAL_URL_ENV}" if os.environ.get(JOURNAL_URL_ENV, "").strip() \
        else f"`{Home(root).config}`"
    return clean(f"journal: {redact(target)} (named by {named}; `{own}` was not read)")


@audit_app.command("anchor")
def audit_anchor(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE) -> None:
    """Verify the journal, then print its head (seq and hash) to keep somewhere else.

    Tamper evidence cannot see a journal that was truncated and re-chained with the
    public hash function; an anchor kept outside the home can: pass it back with
    ``audit verify --anchor``. Exit 1 (and no anchor) when the journal is broken.
    """
    _, report = _verify_report(home, None)
    if not report.intact:
        _print_broken(report)
        raise typer.Exit(1)
    token = f"{report.events}:{report.head_hash}"
    if fmt is Format.JSON:
        sys.stdout.write(json.dumps({"seq": report.events, "hash": report.head_hash,
                                     "anchor": token}) + "\n")
        return
    console.print(f"head: seq {report.events}, hash {report.head_hash}", highlight=False,
                  soft_wrap=True)
    console.print(f"anchor: {token}", highlight=False, soft_wrap=True)
    console.print(f"check later: cradle-kg audit verify --anchor {token}", highlight=False,
                  soft_wrap=True)


class _ToolCollector:
    """A registrar that keeps what ``tools list`` shows: each tool, checked as
    :meth:`Runtime.register_tool` checks it (its contract, its postcondition shapes
    compiled), and the verifiers (a duplicate id is refused here too)."""

    def __init__(self) -> None:
        from ..tools import ToolRegistry
        from ..verifiers import VerifierRegistry

        self.tools = ToolRegistry()
        self.verifiers = VerifierRegistry()

    def register_tool(self, spec: ToolSpec, fn: ToolFunction, *,
                      lookup: LookupFunction | None = None) -> None:
        if spec.postconditions:  # rdflib and the SHACL engine: only for a tool with shapes
            from ..loop.gate2_world import compile_postconditions

            compile_postconditions(spec)  # as Runtime.register_tool: a bad shape refuses it
        self.tools.register(spec, fn, lookup=lookup)

    def register_verifier(self, verifier_id: str, fn: VerifierFunction) -> None:
        self.verifiers.register(verifier_id, fn)

    def register_validator(self, tool_pattern: str, fn: DomainValidator, *, name: str,
                           pack: str | None = None) -> None:
        """Not listed."""

    def register_invariant(self, tool_pattern: str, fn: DomainInvariant, *,
                           name: str) -> None:
        """Not listed."""


def declared_tools(home: Path | None) -> ToolRegistry:
    """The tools a runtime on this home registers, collected without opening one.

    The home's configuration is read and its packs are imported and checked the way
    :class:`Runtime` loads them; no journal, graph store, policy set or recovery is opened,
    so listing writes nothing and costs the packs' own imports only."""
    from ..config import load_config

    root = resolve_home(home)
    config = load_config(Home(root).config)
    collector = _ToolCollector()
    if config.packs:  # a pack's tools are known once its Python is imported
        from datetime import UTC, datetime

        from ..packs.registration import prepare_pack
        from ..packs.registry import PackRegistry

        registry = PackRegistry.discover(root)
        loaded: set[str] = set()
        for ref in config.packs:
            pack = registry.get(ref)
            if pack.ref not in loaded:
                loaded.add(pack.ref)
                prepare_pack(pack, home=root, clock=lambda: datetime.now(UTC)
                             ).register(collector)
    return collector.tools


@tools_app.command("list")
def tools_list(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE) -> None:
    """List registered tools with their side-effect and idempotency classes."""
    try:
        tools = declared_tools(home)
        # the JSON records carry each tool's input and output JSON Schema; the table shows
        # none, so it does not pay for building them (~1 ms a tool)
        records = tools.records() if fmt is Format.JSON else []
    except CradleError as exc:
        fail(exc)
    if fmt is Format.JSON:
        print_json([r.model_dump(mode="json") for r in records])
        return
    table("tools", ["id", "version", "side effect", "idempotency", "verifier", "scopes"],
          [[s.id, s.version, s.side_effect_class.value, s.idempotency.value,
            s.verifier or "-", ",".join(s.required_scopes)] for s in tools.specs()])


@runs_app.command("list")
def runs_list(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
              limit: Annotated[int, typer.Option(
                  min=1, help="How many runs to show (newest first).")] = 50,
              offset: Annotated[int, typer.Option(
                  min=0, help="How many of the newest runs to skip.")] = 0,
              status: Annotated[str | None, typer.Option(
                  "--status", help="Only runs in this state: open, waiting_for_person, "
                  "escalated, completed, completed_with_failures.", show_default=False)] = None
              ) -> None:
    """List runs with their state (and last outcome), newest first, one page at a time.

    The table ends with how many runs are in each state."""
    from ..runs import list_page, parse_state, state_counts

    try:
        wanted = parse_state(status) if status is not None else None
    except CradleError as exc:
        fail(exc)
    with open_journal(home) as journal:
        runs, total = list_page(journal, limit=limit, offset=offset, newest_first=True,
                                state=wanted)
        counts = state_counts(journal) if fmt is Format.TABLE else {}
    if fmt is Format.JSON:
        print_json([r.to_dict() for r in runs])
        return
    table("runs", ["run", "state", "last outcome", "proposals", "events", "updated"],
          [[r.run_id, r.state.value, r.status, r.proposal_count, r.events,
            r.updated_at.isoformat()] for r in runs])
    console.print("  ".join(f"{k}: {v}" for k, v in counts.items()), highlight=False)
    if offset + len(runs) < total:
        err_console.print(f"{offset + 1} to {offset + len(runs)} of {total} runs; "
                          f"more with --offset {offset + len(runs)}", highlight=False)


@runs_app.command("show")
def runs_show(run_id: str, home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
              limit: Annotated[int, typer.Option(
                  min=1, max=1000, help="How many events of the timeline to show.")] = 200,
              after_seq: Annotated[int, typer.Option(
                  "--after-seq", min=0,
                  help="Show the events after this seq (the next page).")] = 0) -> None:
    """Show one run: its status and one page of the timeline of its events."""
    from ..runs import more, page_fields, show_run, shown_timeline

    with open_journal(home) as journal:
        try:
            summary, events = show_run(journal, run_id, limit=limit, after_seq=after_seq)
            timeline = shown_timeline(journal, run_id, events) if fmt is Format.JSON else []
        except CradleError as exc:
            fail(exc)
    if fmt is Format.JSON:
        print_json({**summary.to_dict(), **page_fields(summary, events, limit),
                    "timeline": timeline})
        return
    console.print(f"run {clean(summary.run_id)}: {summary.state.value} (last outcome "
                  f"{clean(summary.status)})", highlight=False)
    for why in summary.why():
        console.print(f"  why: {clean(why)}", highlight=False, soft_wrap=True)
    table("timeline", ["seq", "at", "kind", "subject", "actor"],
          [[e.seq, e.at.isoformat(), e.kind, e.subject, e.actor] for e in events])
    if more(summary, events):
        err_console.print(f"{len(events)} of the run's {summary.events} events; more with "
                          f"--after-seq {events[-1].seq}", highlight=False)


@runs_app.command("resume")
def runs_resume(run_id: str, home: HomeOpt = None) -> None:
    """Continue a run whose approval has been given (normally this happens by itself)."""
    with open_runtime(home) as rt:
        try:
            outcomes = rt.resume(run_id)
        except CradleError as exc:
            fail(exc)
    print_json([o.model_dump(mode="json") for o in outcomes])


def install(app: typer.Typer) -> None:
    app.command()(demo)
    app.command()(submit)
    app.command()(schema)
    app.add_typer(audit_app, name="audit")
    app.add_typer(tools_app, name="tools")
    app.add_typer(runs_app, name="runs")
