"""What every command shares: ``--home``, ``--format``, printing, and error handling."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import CradleError

console = Console()
err_console = Console(stderr=True)

HomeOpt = Annotated[
    Path | None,
    typer.Option("--home", help="Runtime home (default `./.cradle`, or $CRADLE_HOME).",
                 show_default=False),
]


class Format(StrEnum):
    TABLE = "table"
    JSON = "json"


FormatOpt = Annotated[Format, typer.Option("--format", help="Output format.")]


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def report_error(error: CradleError) -> None:
    err_console.print(f"[bold red]error[/]: {escape(error.message)}", highlight=False)
    if error.hint:
        err_console.print(f"  hint: {escape(error.hint)}", highlight=False)


def fail(error: CradleError, *, code: int = 2) -> NoReturn:
    """Print a typed error as one readable line (and its hint) and exit."""
    report_error(error)
    raise typer.Exit(code)


def table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    t = Table(title=title, show_lines=False)
    for col in columns:
        t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*(str(x) for x in row))
    console.print(t)
