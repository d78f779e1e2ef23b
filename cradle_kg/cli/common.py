"""What every command shares: ``--home``, ``--format``, printing, and error handling."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from ..errors import CradleError, InputError, InputTooLargeError
from ..inputs import read_file

if TYPE_CHECKING:  # rich is imported on the first line a command prints through it
    from rich.console import Console

#: what a terminal would act on instead of showing: C0 and C1 controls (ESC starts every
#: escape sequence), DEL, and the bidi marks, embeddings, overrides and isolates
_CONTROLS: dict[int, str | None] = {
    **{c: None for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]},
    0x09: " ", 0x0A: " ",
    **{c: None for c in [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
                         *range(0x2066, 0x206A)]},
}
#: the same, keeping the newlines and tabs of multi-line output
_LINE_CONTROLS = {c: r for c, r in _CONTROLS.items() if c not in (0x09, 0x0A)}
#: the same characters, escaped in JSON output (where they stay data, exactly)
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in _CONTROLS if c >= 0x7F}
#: the same characters but the line breaks and tabs, escaped in graph output: a JSON string,
#: an RDF term (Turtle, TriG, N-Quads) and a SPARQL TSV cell read ``\\u001b`` as the very
#: character it stands for, so the escaped text is the same data (``tests/security/test_77``)
_TERM_ESCAPES = {c: f"\\u{c:04x}" for c in _CONTROLS if c not in (0x09, 0x0A, 0x0D)}


@cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class _Console(Console):
        """A console that never passes a control character through from a string it
        prints: whatever a command forgets to :func:`clean`, a terminal still shows and
        never obeys."""

        def print(self, *objects: Any, **kwargs: Any) -> None:
            super().print(*(o.translate(_LINE_CONTROLS) if isinstance(o, str) else o
                            for o in objects), **kwargs)

    return _Console


class LazyConsole:
    """A rich console made on first use (``rich`` costs ~30 ms to import): a command that
    prints only JSON, or nothing, never imports it. ``real`` is the console itself.

    Emoji codes are not replaced (``emoji=False``): a value is shown as it is — ``:smile:``
    in an id stays those seven characters — and rich's table of ~4,000 codes is not loaded
    (~3 ms at the first table)."""

    def __init__(self, **options: Any) -> None:
        self._options = {"emoji": False, **options}
        self._real: Console | None = None

    @property
    def real(self) -> Console:
        if self._real is None:
            self._real = _console_class()(**self._options)
        return self._real

    def print(self, *objects: Any, **kwargs: Any) -> None:
        self.real.print(*objects, **kwargs)

    @property
    def is_terminal(self) -> bool:
        return self.real.is_terminal


console = LazyConsole()
#: errors are one line each, never wrapped at the terminal's (or a pipe's 80) columns
err_console = LazyConsole(stderr=True, soft_wrap=True)


HomeOpt = Annotated[
    Path | None,
    typer.Option("--home", help="Runtime home (default `./.cradle`, or $CRADLE_HOME).",
                 show_default=False),
]


class Format(StrEnum):
    TABLE = "table"
    JSON = "json"


FormatOpt = Annotated[Format, typer.Option("--format", help="Output format.")]
#: the OWL reasoner's time limit (``tests/security/test_358``); unset:
#: ``CRADLE_REASONER_TIMEOUT``, else 120 s (read by ``graph.owl.reasoner_timeout``)
ReasonerTimeoutOpt = Annotated[float | None, typer.Option(
    "--reasoner-timeout", metavar="SECONDS", show_default=False,
    help="Stop HermiT after this many seconds (default: $CRADLE_REASONER_TIMEOUT, else 120).")]


def clean(value: Any) -> str:
    """``value`` as text a terminal shows as it is: control characters and bidi overrides
    removed (tabs and newlines become spaces), Rich markup escaped.

    Every table cell and every printed line that carries a recorded value goes through
    this — ids, task ids and reasons come from agents and must not steer the screen."""
    from rich.markup import escape

    return escape(clean_text(value))


def clean_text(value: Any) -> str:
    """:func:`clean` for a line written without Rich: control characters and bidi
    overrides removed, no markup escaped."""
    return str(value).translate(_CONTROLS)


def escape_terms(text: str) -> str:
    """Graph output written as it is serialised — a SPARQL result in JSON or TSV, Turtle,
    TriG, N-Quads, JSON-LD — with every control character and bidi mark but tabs and line
    breaks ``\\u``-escaped: the same data, and nothing a terminal obeys. The serialisers
    leave the agents' text in literals raw (ESC in TSV, C1 controls and bidi overrides
    everywhere)."""
    return text.translate(_TERM_ESCAPES)


def terminal_text(text: str) -> str:
    """Output with no escape syntax (SPARQL CSV): on a terminal, its control characters
    and bidi marks removed (line breaks kept); to a file or a pipe, exactly as it is."""
    if not sys.stdout.isatty():
        return text
    return text.replace("\r\n", "\n").translate(_LINE_CONTROLS)


def print_json(value: Any) -> None:
    """JSON on stdout: values exactly, with C1 controls and bidi marks ``\\u``-escaped
    (``json`` escapes C0 itself), so piping it to a terminal is safe too."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write(text.translate(_JSON_ESCAPES) + "\n")


def report_error(error: CradleError) -> None:
    err_console.print(f"[bold red]error[/]: {clean(error.message)}", highlight=False)
    if error.hint:
        err_console.print(f"  hint: {clean(error.hint)}", highlight=False)


def report_unexpected(exc: BaseException) -> None:
    """An exception no command expected, as one line (never a traceback). A value that is
    not valid UTF-8 (a command-line byte Python keeps as a lone surrogate) that reached a
    journal's driver is said as such: no record can hold it, nothing was written (each
    write binds inside its transaction), and the commands that check their input first say
    which one (``tests/security/test_600``)."""
    if isinstance(exc, UnicodeEncodeError) and "surrogate" in exc.reason:
        err_console.print("[bold red]error[/]: a value on the command line is not valid "
                          "UTF-8 (no record can hold it); nothing was written",
                          highlight=False)
        return
    text = " ".join(str(exc).split())
    text = text if len(text) <= 300 else text[:297] + "..."
    what = type(exc).__name__
    err_console.print(f"[bold red]error[/]: unexpected {clean(what)}"
                      + (f": {clean(text)}" if text else ""), highlight=False)


def read_input(source: str, max_bytes: int) -> bytes:
    """The bytes of a file a command is given, or of stdin for ``-``, refusing more than
    ``max_bytes`` before reading them all. A file is read by the runtime's one strict
    reader (:func:`cradle_kg.inputs.read_file`): a regular file only, opened without
    blocking — a FIFO or a device named here had ``submit``, ``input --file`` and
    ``evidence add`` wait on it for ever (``tests/security/test_281``)."""
    if source != "-":
        return read_file(Path(source), max_bytes=max_bytes)
    try:
        data = sys.stdin.buffer.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f"cannot read stdin: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise InputTooLargeError(f"`-`: more than the limit of {max_bytes} bytes")
    return data


def fail(error: CradleError, *, code: int = 2) -> NoReturn:
    """Print a typed error as one readable line (and its hint) and exit."""
    report_error(error)
    raise typer.Exit(code)


def table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    """Every cell (and the title) through :func:`clean`: no markup, no control characters."""
    from rich.table import Table

    t = Table(title=clean(title), show_lines=False)
    for col in columns:
        t.add_column(clean(col), overflow="fold")
    for row in rows:
        t.add_row(*(clean(x) for x in row))
    console.print(t, highlight=False)


def pack_queries(home: Path | None) -> dict[str, dict[str, Path]]:
    """The named queries the installed packs declare (``pack id -> name -> file``).

    Here, not in ``cli.query``: ``serve`` needs it and must not import the query
    command's graph tooling (rdflib's SPARQL, pySHACL, owlready2: ~60 MB in the server)."""
    from ..home import resolve_home
    from ..packs.registry import PackRegistry

    try:
        registry = PackRegistry.discover(resolve_home(home))
    except CradleError as exc:
        err_console.print(f"note: pack queries left out: {exc.message}", highlight=False)
        return {}
    return {p.id: p.query_files() for p in registry.latest() if p.query_files()}
