"""Storage commands: ``db migrate|status``, ``journal copy``, ``worker``.

The journal is the home's embedded SQLite file unless ``CRADLE_JOURNAL_URL`` or the
config's ``"journal"`` names a PostgreSQL database (``--journal URL`` overrides both here).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated

import typer

from ..config import load_config
from ..errors import CradleError, InputError, InputTooLargeError
from ..home import Home, resolve_home
from ..inputs import CappedLines
from ..records import OutcomeStatus
from ..storage import home_journal_target, is_postgres, redact
from .common import Format, FormatOpt, HomeOpt, clean, console, err_console, fail, print_json

db_app = typer.Typer(help="The PostgreSQL journal's schema: migrate, status.",
                     no_args_is_help=True)
journal_app = typer.Typer(help="Move a journal between backends.", no_args_is_help=True)

JournalOpt = Annotated[
    str | None,
    typer.Option("--journal", help="The journal (`postgresql://...`); default: "
                 "CRADLE_JOURNAL_URL, else the config's `journal`.", show_default=False),
]


def _postgres_url(home: Path | None, journal: str | None) -> str:
    try:
        target = journal or home_journal_target(resolve_home(home))
    except CradleError as exc:
        fail(exc)
    if not is_postgres(target):
        fail(InputError(f"the journal `{target}` is the embedded SQLite file: it needs no "
                        "migration", hint="set CRADLE_JOURNAL_URL or pass --journal "
                                          "postgresql://..."))
    return target


@db_app.command("migrate")
def db_migrate(home: HomeOpt = None, journal: JournalOpt = None,
               fmt: FormatOpt = Format.TABLE) -> None:
    """Apply the pending schema migrations to the PostgreSQL journal (each once), and
    install again the migrations' functions found altered."""
    from ..storage.pg_admin import migrate, restore_functions

    url = _postgres_url(home, journal)
    try:
        applied = migrate(url)
        restored = restore_functions(url)
    except CradleError as exc:
        fail(exc)
    if fmt is Format.JSON:
        print_json({"journal": redact(url), "applied": [list(a) for a in applied],
                    "restored": restored})
        return
    for version, name in applied:
        console.print(f"applied {version}: {name}", highlight=False)
    for name in restored:  # altered or dropped by someone else: the migrations' own again
        console.print(f"restored function {name}: it was not the migrations'",
                      highlight=False)
    console.print(f"{clean(redact(url))}: schema up to date", highlight=False, soft_wrap=True)


@db_app.command("status")
def db_status(home: HomeOpt = None, journal: JournalOpt = None,
              fmt: FormatOpt = Format.TABLE) -> None:
    """The migrations applied and pending; exit 1 when some are pending."""
    from ..storage.pg_admin import status

    url = _postgres_url(home, journal)
    try:
        st = status(url)
    except CradleError as exc:
        fail(exc)
    if fmt is Format.JSON:
        print_json({"journal": redact(url), "applied": [list(a) for a in st.applied],
                    "pending": [list(p) for p in st.pending], "events": st.events})
    else:
        for version, name in st.applied:
            console.print(f"applied {version}: {name}", highlight=False)
        for version, name in st.pending:
            console.print(f"pending {version}: {name}", highlight=False)
        if st.events is not None:
            console.print(f"{st.events} events", highlight=False)
    raise typer.Exit(1 if st.pending else 0)


class _CopyProgressLines:
    """``journal copy``'s progress on stderr: a line per phase and then one at most every
    two seconds (with the rate while rows are copied)."""

    def __init__(self) -> None:
        self.started = self.last = time.monotonic()
        self.phase = ""

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if phase == self.phase and now - self.last < 2.0 and done < total:
            return
        if phase != self.phase:
            self.phase, self.started = phase, now
        self.last = now
        rate = f" ({done / (now - self.started):,.0f}/s)" \
            if phase == "copying" and now > self.started else ""
        err_console.print(f"{phase}: {done:,} / {total:,}{rate}", highlight=False)


@journal_app.command("copy")
def journal_copy(
    to: Annotated[str, typer.Option("--to", help="The PostgreSQL journal to fill "
                                    "(`postgresql://...`, an empty database).")],
    home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
) -> None:
    """Copy the home's SQLite journal into PostgreSQL, row for row (same seq, ids and
    hashes); the copy is verified on arrival and must end at the source's head."""
    from ..storage.pg_admin import copy_sqlite

    source = Home(resolve_home(home)).journal
    if not source.is_file():
        fail(InputError(f"no journal at `{source}`", hint="pass --home"))
    if not is_postgres(to):
        fail(InputError(f"`{redact(to)}` is not a `postgresql://` URL"))
    try:
        report = copy_sqlite(source, to, progress=_CopyProgressLines())
    except CradleError as exc:
        fail(exc)
    if fmt is Format.JSON:
        print_json({"to": redact(to), "events": report.events, "head_hash": report.head_hash,
                    "intact": report.intact})
        return
    console.print(f"copied {report.events} events to {clean(redact(to))}; verified, head "
                  f"{report.head_hash}", highlight=False, soft_wrap=True)
    console.print("to use it: set CRADLE_JOURNAL_URL, or `\"journal\"` in config.json",
                  highlight=False)


#: bytes read from stdin at a time (a longer line is joined from several reads)
_CHUNK = 1 << 16


def capped_stdin_lines(stream: IO[bytes], cap: int) -> Iterator[bytes | None]:
    """The ``\\n``-ended lines of ``stream`` (without their ``\\n``; the last one even
    unended), read a chunk at a time: a line that grows past ``cap`` bytes is dropped as it
    arrives, never buffered, and is ``None`` once its end (or the stream's) has come:
    :class:`~cradle_kg.inputs.CappedLines` over reads (``worker``'s stdin;
    ``tests/security/test_75``)."""
    read = getattr(stream, "read1", stream.read)
    lines = CappedLines(cap)
    while chunk := read(_CHUNK):
        for line in lines.feed(chunk)[0]:
            yield None if line is None else line[:-1]
    last = lines.rest()
    if last is None or last:  # one past the cap is answered too
        yield last


def worker(home: HomeOpt = None, journal: JournalOpt = None,
           recover_every: Annotated[float, typer.Option(
               "--recover-every", help="Seconds between recovery passes (0: only at start).",
               min=0)] = 5.0,
           graph_sync: Annotated[bool, typer.Option(
               "--graph-sync/--no-graph-sync",
               help="Also bring the home's graph up to the journal after each call (one "
                    "worker holding the store would project every worker's events).")
           ] = False) -> None:
    """Run one worker on the journal: proposals in (JSON lines), outcomes out.

    Reads one proposal per line on stdin and writes one outcome per line on stdout
    (exit 1 if any was not executed). Start as many as you like against one PostgreSQL journal:
    each holds a lease, limits and budgets are counted from the journal, and a live
    worker reconciles the intents of a dead one (once) every ``--recover-every`` seconds.
    The graph is not synced after each call unless ``--graph-sync``: one projector does it
    (``cradle-kg graph sync``, or ``serve``).
    """
    from ..loop.proposal import read_proposal
    from ..loop.runtime import open_home

    root = resolve_home(home)
    try:
        limits = load_config(Home(root).config).input_limits
        rt = open_home(root, journal=journal, graph_sync=graph_sync)
    except CradleError as exc:
        fail(exc)
    stop = threading.Event()

    def recover_loop() -> None:
        while not stop.wait(recover_every):
            try:
                rt.recover()
            except CradleError as exc:
                err_console.print(f"warning: recovery pass failed: {clean(exc)}", highlight=False)

    passes = threading.Thread(target=recover_loop, name="cradle-recovery", daemon=True)
    if recover_every > 0:
        passes.start()
    err_console.print(f"worker {clean(rt.lease.id)} on {clean(rt.journal.location)}",
                      highlight=False, soft_wrap=True)
    failed = False
    try:
        # bytes, capped as they arrive: a line past max_bytes is never held, one not
        # UTF-8 is its own error (tests/security/test_75)
        for n, line in enumerate(capped_stdin_lines(sys.stdin.buffer, limits.max_bytes),
                                 start=1):
            if line is not None and not line.strip():
                continue
            try:
                if line is None:
                    raise InputTooLargeError(f"`stdin:{n}`: more than the limit of "
                                             f"{limits.max_bytes} bytes")
                raw = read_proposal(line, limits, source=f"stdin:{n}")
                outcome = rt.submit(raw)
            except CradleError as exc:
                failed = True
                sys.stdout.write(json.dumps({"line": n, "error": str(exc)}) + "\n")
            else:
                failed |= outcome.status is not OutcomeStatus.EXECUTED
                sys.stdout.write(json.dumps(outcome.model_dump(mode="json")) + "\n")
            sys.stdout.flush()
    finally:
        stop.set()
        if passes.is_alive():
            passes.join(60)
        rt.close()
    raise typer.Exit(1 if failed else 0)


def install(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
    app.add_typer(journal_app, name="journal")
    app.command()(worker)
