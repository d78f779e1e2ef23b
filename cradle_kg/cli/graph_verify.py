"""``cradle-kg graph verify``: the graph store against the projection of the journal
(:mod:`cradle_kg.graph.verify`). Exit 0 equal, 1 different (the graphs named), 2 error.

Read only: the journal is opened read only, the embedded store read only under its lock
(a busy store is refused in one line: a writer moving it during the comparison would
read as a difference), the projection goes to a temporary folder.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer

from ..errors import CradleError, InputError
from ..graph.verify import GraphReport, Progress, verify_graph
from ..home import Home, resolve_home
from ..storage.graph import GraphStore
from ..storage.graph_opening import is_remote, open_graph_store
from ..storage.oxigraph import OxigraphStore
from ..storage.swap import StoreLock
from .common import Format, FormatOpt, HomeOpt, clean, console, err_console, fail, print_json
from .core import open_journal


def _open_store(root: Path, stack: ExitStack) -> GraphStore:
    """The home's store, read only: remote as configured, embedded under its lock."""
    if is_remote(root):
        store = open_graph_store(root)
    else:
        path = Home(root).graph
        if not path.is_dir():
            raise InputError(f"no graph store at `{path}`: nothing to verify",
                             hint="`cradle-kg graph rebuild` projects the journal into one")
        stack.enter_context(StoreLock(path))  # first: a busy store is refused, untouched
        store = OxigraphStore(path, read_only=True)
    stack.callback(store.close)
    return store


def _run(root: Path, home: Path | None, show: int, progress: Progress | None) -> GraphReport:
    from ..packs.hooks import home_knowledge, home_projectors

    with ExitStack() as stack:
        journal = stack.enter_context(open_journal(home))
        store = _open_store(root, stack)
        return verify_graph(store, journal, projectors=home_projectors(root),
                            knowledge=home_knowledge(root), show=show, progress=progress)


def _verify(home: Path | None, show: int) -> GraphReport:
    root = resolve_home(home)
    if not err_console.is_terminal:
        return _run(root, home, show, None)
    from rich.progress import Progress as Bar

    with Bar(console=err_console.real, transient=True) as bar:
        tasks = {"projecting": bar.add_task("projecting the journal", total=None),
                 "comparing": bar.add_task("comparing the graphs", total=None)}

        def show_progress(phase: str, done: int, total: int) -> None:
            bar.update(tasks[phase], completed=done, total=total)

        return _run(root, home, show, show_progress)


def _print(report: GraphReport) -> None:
    behind = (f" (the store is at event {report.events}, the journal at {report.head}: "
              "`graph sync` catches it up)") if report.events < report.head else ""
    if report.equal:
        console.print(f"equal: {report.graphs} graphs, the projection of events up to "
                      f"{report.events}{behind}", highlight=False, soft_wrap=True)
    else:
        console.print(f"DIFFERENT: {len(report.differing)} of {report.graphs} graphs"
                      f"{behind}", highlight=False, soft_wrap=True)
    for problem in report.problems:
        console.print(f"  store: {clean(problem)}", highlight=False, soft_wrap=True)
    for diff in report.differing:
        console.print(f"  graph <{clean(diff.graph)}>: {diff.store_quads} quads in the store,"
                      f" {diff.expected_quads} in the projection", highlight=False,
                      soft_wrap=True)
        for line in diff.added:
            console.print(f"    + {clean(line)}", highlight=False, soft_wrap=True)
        for line in diff.missing:
            console.print(f"    - {clean(line)}", highlight=False, soft_wrap=True)
    for graph in report.unchecked:
        console.print(f"  not checked (no loaded pack builds it): <{clean(graph)}>",
                      highlight=False, soft_wrap=True)


def graph_verify(
    home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
    show: Annotated[int, typer.Option(
        "--show", min=0, help="Differing quads shown per graph, each way.")] = 10,
) -> None:
    """Check that the graph store holds the projection of the journal, read only.

    Projects the journal (up to the store's watermark) into a temporary store and compares
    them graph by graph (each run's, the shared graph, the packs' knowledge graphs). Exit 0
    equal, 1 different (the graphs named, with the quads added and missing), 2 error."""
    try:
        report = _verify(home, show)
    except CradleError as exc:
        fail(exc)
    if fmt is Format.JSON:
        print_json(report.to_dict())
    else:
        _print(report)
    raise typer.Exit(0 if report.equal else 1)


__all__ = ["graph_verify"]
