"""Graph commands: ``graph rebuild``, ``export``, ``validate``, ``ontology check``.

``validate`` exit codes follow pySHACL: 0 conforms, 1 violations, 2 input or usage error
(with file and line for parse errors).
"""

from __future__ import annotations

import json
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import pyoxigraph as ox
import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from ..config import write_whole
from ..errors import CradleError, InputError, UnknownNameError
from ..graph.bulk import validate_store
from ..graph.catchup import catch_up, check_watermark, rebuild
from ..graph.owl import check_ontology
from ..graph.owl import reasoner_timeout as owl_limit
from ..graph.packproj import PackProjector
from ..graph.project import run_graph
from ..graph.shacl import ShaclEngine, ValidationReport, load_shapes, make_engine
from ..graph.vocab import ONTOLOGY_FILE
from ..home import Home, resolve_home
from ..storage import Journal
from ..storage.graph import MAX_EXPORT_BYTES, PROJECTION_VERSION, GraphStore
from ..storage.graph_opening import is_remote, open_graph_store
from ..storage.oxigraph import OxigraphStore, rebuild_folder
from ..storage.swap import StoreLock
from .common import (
    Format,
    FormatOpt,
    HomeOpt,
    ReasonerTimeoutOpt,
    clean,
    console,
    escape_terms,
    fail,
    print_json,
)
from .core import open_journal

graph_app = typer.Typer(help="The RDF projection of the journal.", no_args_is_help=True)
ontology_app = typer.Typer(help="The execution ontology (OWL).", no_args_is_help=True)


class ExportFormat(StrEnum):
    TRIG = "trig"
    NQUADS = "nquads"
    TURTLE = "turtle"
    JSONLD = "jsonld"


class ReportFormat(StrEnum):
    TEXT = "text"
    JSON = "json"
    TURTLE = "turtle"


_OX_FORMATS = {ExportFormat.TRIG: ox.RdfFormat.TRIG, ExportFormat.NQUADS: ox.RdfFormat.N_QUADS,
               ExportFormat.TURTLE: ox.RdfFormat.TURTLE,
               ExportFormat.JSONLD: ox.RdfFormat.JSON_LD}


def home_projectors(root: Path) -> list[PackProjector]:
    from ..packs.hooks import home_projectors as hooks

    return hooks(root)


def open_graph(home: Path | None, *, sync: bool = True) -> GraphStore:
    """The home's store (embedded: locked, a busy one refused in one line), up to the
    journal."""
    root = resolve_home(home)
    with open_journal(home) as journal:  # no journal: refused before anything is created
        try:
            store = open_graph_store(root)
        except CradleError as exc:
            fail(exc)
        if sync:
            try:
                catch_up_home(store, journal, root)
            except CradleError as exc:
                store.close()
                fail(exc)
            except BaseException:
                store.close()
                raise
    return store


def catch_up_home(store: GraphStore, journal: Journal, root: Path) -> int:
    """Bring ``store`` up to the journal with the home's packs' projection hooks, and
    their knowledge graphs installed (the packs are loaded only when the store is behind:
    that imports their code)."""
    seq = store.projected_seq()
    head = journal.head()[0]
    if seq > head:  # read after the watermark: a store ahead of it is refused
        check_watermark(seq, journal)
    if seq >= head and (not seq or store.layout() >= PROJECTION_VERSION):
        # at the head in this code's layout (a newer one is read as it is); at the head in
        # an older layout, or one a rebuild stopped part-way left (layout 0), it is
        # rebuilt by the catch-up, not read as current (tests/security/test_404)
        return 0
    from ..graph.knowledge import install
    from ..packs.hooks import home_knowledge

    install(store, home_knowledge(root))
    return catch_up(store, journal, projectors=home_projectors(root))


@graph_app.command("rebuild")
def graph_rebuild(home: HomeOpt = None) -> None:
    """Recreate the graph store from the journal (with a progress bar).

    Embedded: the store's lock is taken first (a busy store is refused in one line); the
    new graph is built beside the old one and swapped in only when complete. Remote: the
    projection's graphs are replaced in place, the watermark written last."""
    from ..graph.knowledge import install
    from ..packs.hooks import home_knowledge

    root = resolve_home(home)
    path = Home(root).graph
    with open_journal(home) as journal:
        head, _ = journal.head()
        lock: StoreLock | None = None
        remote: GraphStore | None = None
        try:
            if is_remote(root):
                remote = open_graph_store(root)
            else:
                lock = StoreLock(path).acquire()  # first: a busy store is refused, untouched
        except CradleError as exc:
            fail(exc)
        try:
            with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn(
                    "{task.completed}/{task.total} events"), TimeElapsedColumn(),
                    console=console.real) as bar:
                task = bar.add_task("projecting", total=head)
                projectors = home_projectors(root)
                sources = home_knowledge(root)

                def load(store: GraphStore) -> int:
                    count = rebuild(store, journal, projectors=projectors,
                                    progress=lambda done, total: bar.update(
                                        task, completed=done, total=total))
                    install(store, sources)  # the packs' knowledge graphs (issue 14): in
                    return count  # the new store, before its compaction and swap
                if remote is not None:
                    count, quads, where = load(remote), -1, remote.describe()
                else:
                    count, quads = rebuild_folder(
                        path, load, locked=lock,
                        compacting=lambda: bar.update(task, description="compacting"))
                    where = str(path)
        except CradleError as exc:
            fail(exc)
        finally:
            if lock is not None:
                lock.release()
            if remote is not None:
                remote.close()
    shown = f"{quads} quads" if quads >= 0 else "its graphs"
    console.print(f"rebuilt: {count} events -> {shown} in {where}", highlight=False)


@graph_app.command("compact")
def graph_compact(home: HomeOpt = None) -> None:
    """Compact the embedded graph store (RocksDB's full compaction).

    ``graph rebuild`` leaves its store compacted; a store written a batch at a time is
    compacted by RocksDB in the background while a process holds it, and one that was
    never held long enough (a bulk load by another tool, a short-lived runtime) is many
    overlapping files that every scan reads: the bench's aggregate over every decision
    cost 3.3 times the CPU. Takes the store's lock (a busy store is refused in one line);
    a remote store compacts itself."""
    root = resolve_home(home)
    if is_remote(root):
        fail(InputError("the home's graph is a remote store: it compacts itself",
                        hint="`graph compact` is for the embedded store"))
    store = open_graph(home, sync=False)
    try:
        assert isinstance(store, OxigraphStore)
        started = time.perf_counter()
        with console.real.status("compacting"):
            store.compact()
    except CradleError as exc:
        fail(exc)
    finally:
        store.close()
    console.print(f"compacted: {Home(root).graph} in {time.perf_counter() - started:.1f} s",
                  highlight=False)


@graph_app.command("sync")
def graph_sync(home: HomeOpt = None) -> None:
    """Project the events appended since the last sync."""
    root = resolve_home(home)
    with open_journal(home) as journal:
        store = open_graph(home, sync=False)
        try:
            added = catch_up_home(store, journal, root)
        except CradleError as exc:
            fail(exc)
        finally:
            store.close()
    console.print(f"synced: {added} new events", highlight=False)


def export(
    home: HomeOpt = None,
    run: Annotated[str | None, typer.Option("--run", help="Only this run's graph.")] = None,
    fmt: Annotated[ExportFormat, typer.Option("--format")] = ExportFormat.TRIG,
    output: Annotated[Path | None, typer.Option("--output", "-o")] = None,
    max_bytes: Annotated[int, typer.Option(
        "--max-bytes", min=1, help="The most N-Quads bytes read from the store, in all.")]
        = MAX_EXPORT_BYTES,
) -> None:
    """Write the graph (or one run's graph) as TriG, N-Quads, Turtle or JSON-LD."""
    store = open_graph(home)
    try:
        text = _export_text(store, run, fmt, max_bytes)
    except CradleError as exc:
        fail(exc)
    finally:
        store.close()
    payload = text if isinstance(text, bytes) else (text or b"")
    if output:
        try:
            _write_whole(output, payload)
        except OSError as exc:
            fail(InputError(f"cannot write `{output}`: {exc.strerror or exc}"))
    else:  # the same triples, no control character raw (tests/security/test_77)
        sys.stdout.buffer.write(escape_terms(payload.decode("utf-8")).encode("utf-8"))


def _write_whole(output: Path, payload: bytes) -> None:
    """``payload`` as ``output``, whole or not at all (:func:`write_whole`: test_359). A
    device or a pipe named (``/dev/stdout``) is written as it is."""
    if output.exists() and not output.is_file():
        output.write_bytes(payload)
    else:
        write_whole(output, payload)


def _export_text(store: GraphStore, run: str | None, fmt: ExportFormat,
                 max_bytes: int = MAX_EXPORT_BYTES) -> bytes | None:
    if run is not None:
        name = run_graph(run)[1:-1]
        if name not in store.run_graphs():
            raise UnknownNameError(f"unknown run `{run}`", hint="`cradle-kg runs list`")
        graphs = [name]
    else:
        graphs = store.data_graphs()
    nquads = store.nquads(graphs=graphs, max_bytes=max_bytes)
    if fmt is ExportFormat.NQUADS:
        return nquads.encode()
    data = ox.Dataset(ox.parse(nquads, format=ox.RdfFormat.N_QUADS))
    if fmt is ExportFormat.TURTLE:  # Turtle has no graphs: the union of the selected ones
        quads = [ox.Quad(q.subject, q.predicate, q.object, ox.DefaultGraph()) for q in data]
        return ox.serialize(sorted(quads, key=str), format=ox.RdfFormat.TURTLE,
                            prefixes=_PREFIXES)
    return ox.serialize(data, format=_OX_FORMATS[fmt], prefixes=_PREFIXES
                        if fmt is not ExportFormat.JSONLD else None)


_PREFIXES = {"cradle": "https://w3id.org/cradle#", "prov": "http://www.w3.org/ns/prov#",
             "xsd": "http://www.w3.org/2001/XMLSchema#",
             "id": "https://w3id.org/cradle/id/"}


def _print_report(report: ValidationReport, fmt: ReportFormat) -> None:
    if fmt is ReportFormat.JSON:
        print_json(report.to_json_dict())
    # a report quotes the nodes and values of the data validated — a file sent for review
    # — as data, never as terminal controls (tests/security/test_77)
    elif fmt is ReportFormat.TURTLE:
        sys.stdout.write(escape_terms(report.to_turtle()))
    else:
        sys.stdout.write(escape_terms(report.to_text()) + "\n")


def validate(
    files: Annotated[list[Path] | None, typer.Argument(help="RDF files to validate.")] = None,
    home: HomeOpt = None,
    run: Annotated[str | None, typer.Option("--run", help="Validate one run's graph.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Validate the whole store.")] = False,
    shapes: Annotated[list[Path] | None, typer.Option("--shapes", help="Extra shapes.")] = None,
    pack: Annotated[list[str] | None, typer.Option("--pack", help="Add a pack's shapes.")] = None,
    engine: Annotated[str, typer.Option("--engine", help="rust (default) or pyshacl.")] = "rust",
    fmt: Annotated[ReportFormat, typer.Option("--format")] = ReportFormat.TEXT,
) -> None:
    """Validate RDF against the integrity rules and structural shapes (+ extra, + packs)."""
    chosen = sum([bool(files), run is not None, all_])
    if chosen != 1:
        fail(InputError("give files, or --run RUN, or --all (exactly one of them)"))
    try:
        extra = [*(shapes or []), *_pack_shapes(pack or [], home)]
        loaded = load_shapes(extra)
        checker = make_engine(engine, loaded)
        if files:
            report = _validate_files(checker, files)
        else:
            store = open_graph(home)
            try:
                graphs = [run_graph(run)[1:-1]] if run is not None else None
                if graphs is not None and graphs[0] not in store.run_graphs():
                    raise UnknownNameError(f"unknown run `{run}`")
                if engine == "rust":  # only the shapes' triples, grouped, in parallel
                    report = validate_store(store, loaded, graphs=graphs)
                else:
                    text = store.nquads(graphs=graphs if graphs is not None
                                        else store.data_graphs())
                    report = checker.validate(text, format="nquads")
            finally:
                store.close()
    except CradleError as exc:
        fail(exc)
    _print_report(report, fmt)
    raise typer.Exit(0 if report.conforms else 1)


def _validate_files(checker: ShaclEngine, files: list[Path]) -> ValidationReport:
    from ..graph.rdfio import read_union

    # every file parses, or a typed error names it (file:line)
    return checker.validate(read_union(files))


def _pack_shapes(packs: list[str], home: Path | None) -> list[Path]:
    if not packs:
        return []
    from ..packs.registry import PackRegistry

    registry = PackRegistry.discover(resolve_home(home))
    out: list[Path] = []
    for ref in packs:
        out.extend(registry.get(ref).shape_files())
    return out


@ontology_app.command("check")
def ontology_check(home: HomeOpt = None, fmt: FormatOpt = Format.TABLE,
                   extra: Annotated[list[Path] | None, typer.Option(
                       "--with", help="Extra ontology files (Turtle).")] = None,
                   no_packs: Annotated[bool, typer.Option("--no-packs")] = False,
                   reasoner_timeout: ReasonerTimeoutOpt = None) -> None:
    """Run HermiT over the core ontology (+ installed packs' ontologies)."""
    try:
        limit = owl_limit(reasoner_timeout)
    except CradleError as exc:
        fail(exc)
    files = [ONTOLOGY_FILE, *(extra or [])]
    if not no_packs:
        from ..packs.registry import PackRegistry

        try:
            for p in PackRegistry.discover(resolve_home(home)).latest():
                files.extend(p.ontology_files())
        except CradleError as exc:
            fail(exc)
    try:
        report = check_ontology(files, timeout=limit)
    except CradleError as exc:
        fail(exc)
    if fmt is Format.JSON:
        print_json(json.loads(report.model_dump_json()))
    else:
        console.print(("consistent" if report.consistent else "INCONSISTENT") +
                      f" ({len(files)} file(s))", highlight=False)
        for cls in report.unsatisfiable:
            console.print(f"  unsatisfiable: {clean(cls)}", highlight=False)
        for msg in report.messages:
            console.print(f"  {clean(msg)}", highlight=False)
        for iri in report.skipped_imports:  # tests/security/test_347
            console.print(f"  not followed (nothing is fetched): owl:imports <{clean(iri)}>",
                          highlight=False)
        for sub, sup in report.hierarchy:
            console.print(f"  {clean(sub)} ⊑ {clean(sup)}", highlight=False)
    raise typer.Exit(0 if report.consistent and not report.unsatisfiable else 1)


def install(app: typer.Typer) -> None:
    from .follow import graph_follow
    from .graph_verify import graph_verify

    graph_app.command("follow")(graph_follow)
    graph_app.command("verify")(graph_verify)
    app.add_typer(graph_app, name="graph")
    app.add_typer(ontology_app, name="ontology")
    app.command()(export)
    app.command()(validate)
