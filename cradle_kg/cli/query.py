"""``cradle-kg query``: ask the provenance graph a question.

    cradle-kg query why-allowed --param action=act:5541...      a named query
    cradle-kg query --file my.rq --param run=<https://...>      a query file
    cradle-kg query --sparql 'SELECT ...'                       a query given inline
    cradle-kg query --list                                      the named queries

Output: ``--format table`` (default), ``json`` (SPARQL 1.1 results JSON), ``csv``,
``tsv``; CONSTRUCT and DESCRIBE print Turtle. Parameters become RDF terms bound by the
engine, never text spliced into the query. Exit codes: 0 answered; 1 an ASK answered
false; 2 the query could not be read, parsed or run.

The graph is the home's on-disk store, brought up to the journal first; when another
process holds the store, the journal is projected into memory instead (same triples).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import unquote

import pyoxigraph as ox
import typer

from ..errors import CradleError, InputError
from ..graph.catchup import rebuild
from ..graph.project import ID_BASE, RUN_BASE
from ..graph.queries import (
    MAX_PAGE_LIMIT,
    MAX_PAGE_OFFSET,
    NamedQuery,
    Page,
    QueryCatalog,
    bind,
    execute,
    paged,
)
from ..graph.sparql_guard import MAX_QUERY_BYTES
from ..graph.vocab import CRADLE_NS, PROV_NS, RDF_NS, RDFS_NS, XSD_NS
from ..home import Home, resolve_home
from ..inputs import read_text_file
from ..storage import open_home_journal
from ..storage.graph import GraphStore
from ..storage.graph_opening import is_remote, open_graph_store
from ..storage.oxigraph import OxigraphStore
from .common import (
    HomeOpt,
    console,
    err_console,
    escape_terms,
    fail,
    pack_queries,
    print_json,
    table,
    terminal_text,
)
from .graph import catch_up_home


class QueryFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"
    TSV = "tsv"


_RESULTS = {QueryFormat.JSON: ox.QueryResultsFormat.JSON,
            QueryFormat.CSV: ox.QueryResultsFormat.CSV,
            QueryFormat.TSV: ox.QueryResultsFormat.TSV}
_SHORT = ((CRADLE_NS, "cradle:"), (PROV_NS, "prov:"), (RDF_NS, "rdf:"), (RDFS_NS, "rdfs:"),
          (XSD_NS, "xsd:"), (ID_BASE, "id:"), (RUN_BASE, "graph:"))


def short(term: Any) -> str:
    """A readable form of a term for the table: known namespaces shortened, ids decoded."""
    if term is None:
        return ""
    if isinstance(term, ox.NamedNode):
        for ns, prefix in _SHORT:
            if term.value.startswith(ns):
                return prefix + unquote(term.value[len(ns):])
        return f"<{term.value}>"
    if isinstance(term, ox.Literal):
        return term.value
    return str(term)


def open_store(home: Path | None) -> GraphStore:
    """The home's graph at the journal head (in memory when the embedded store is busy)."""
    h = Home(resolve_home(home))
    from ..packs.hooks import home_projectors

    with open_home_journal(h.root, must_exist=True) as journal:
        try:
            store = open_graph_store(h.root)
        except CradleError:
            if is_remote(h.root):  # a remote store's errors are said, not worked around
                raise
            err_console.print("note: the graph store is busy; projecting the journal in "
                              "memory", highlight=False)
            memory = OxigraphStore.in_memory()
            rebuild(memory, journal, projectors=home_projectors(h.root))
            return memory
        try:
            catch_up_home(store, journal, h.root)
        except BaseException:
            store.close()
            raise
    return store


def parse_params(raw: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in raw:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InputError(f"`--param {item}`: expected NAME=VALUE")
        out[name.strip()] = value
    return out


def print_result(result: Any, fmt: QueryFormat, *, title: str, page: Page | None = None
                 ) -> int:
    """Print a query result; returns the exit code (1 for an ASK answered false). A full
    ``page`` of a table says, on stderr, how to ask for the next one."""
    # the agents' text in literals reaches no terminal as controls (tests/security/test_77)
    if isinstance(result, ox.QueryTriples):
        sys.stdout.write(escape_terms(
            (result.serialize(format=ox.RdfFormat.TURTLE) or b"").decode("utf-8")))
        return 0
    if fmt is not QueryFormat.TABLE:
        text = (result.serialize(format=_RESULTS[fmt]) or b"").decode("utf-8")
        sys.stdout.write(terminal_text(text) if fmt is QueryFormat.CSV else escape_terms(text))
        if fmt is QueryFormat.JSON:
            sys.stdout.write("\n")
        return 0 if not isinstance(result, ox.QueryBoolean) or bool(result) else 1
    if isinstance(result, ox.QueryBoolean):
        console.print("true" if result else "false", highlight=False)
        return 0 if result else 1
    columns = [v.value for v in result.variables]
    rows = [[short(row[c]) for c in columns] for row in result]
    where = f", from {page.offset + 1}" if page is not None and page.offset and rows else ""
    table(f"{title} ({len(rows)} rows{where})", columns, rows)
    if page is not None and len(rows) == page.limit:
        err_console.print(f"a full page: the next one is `--limit {page.limit} --offset "
                          f"{page.next_offset}`", highlight=False)
    return 0


def _list(catalog: QueryCatalog, as_json: bool) -> None:
    if as_json:
        print_json([{k: v for k, v in q.to_dict().items() if k != "text"}
                    for q in catalog.all()])
        return
    table("named queries", ["name", "question", "parameters"],
          [[q.name, q.question, ", ".join(
              f"{p.name}{'' if p.required else '?'}: {p.kind}" for p in q.params) or "-"]
           for q in catalog.all()])


def query(
    name: Annotated[str | None, typer.Argument(help="A named query (see --list).")] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="NAME=VALUE, repeatable; bound as an RDF term.")] = None,
    file: Annotated[Path | None, typer.Option("--file", help="A SPARQL query file.")] = None,
    sparql: Annotated[str | None, typer.Option("--sparql", help="A SPARQL query.")] = None,
    fmt: Annotated[QueryFormat, typer.Option("--format", help="Output format.")] =
    QueryFormat.TABLE,
    list_: Annotated[bool, typer.Option("--list", help="List the named queries.")] = False,
    queries: Annotated[list[Path] | None, typer.Option(
        "--queries", help="A folder of extra named queries, repeatable.")] = None,
    allow_service: Annotated[list[str] | None, typer.Option(
        "--allow-service", help="A SERVICE endpoint the query may call, repeatable.")] = None,
    packs: Annotated[bool, typer.Option(
        "--packs/--no-packs", help="Include the named queries of installed packs.")] = True,
    limit: Annotated[int | None, typer.Option(
        "--limit", min=1, max=MAX_PAGE_LIMIT,
        help="A page: at most N answers (after the query's ORDER BY).")] = None,
    offset: Annotated[int, typer.Option(
        "--offset", min=0, max=MAX_PAGE_OFFSET,
        help="The page starts after this many answers (with --limit).")] = 0,
    home: HomeOpt = None,
) -> None:
    """Ask the provenance graph a question: a named query, a file, or inline SPARQL."""
    try:
        catalog = QueryCatalog.load(queries or [], packs=pack_queries(home) if packs else None)
        if list_:
            _list(catalog, fmt is QueryFormat.JSON)
            return
        if sum(x is not None for x in (name, file, sparql)) != 1:
            raise InputError("give exactly one of: a query NAME, --file, --sparql",
                             hint="`cradle-kg query --list` lists the named queries")
        named: NamedQuery | None = catalog.get(name) if name else None
        if named is not None:
            text = named.text
        elif file is not None:
            text = read_text_file(file, max_bytes=MAX_QUERY_BYTES)
        else:
            text = sparql or ""
        if offset and limit is None:
            raise InputError("`--offset` needs `--limit`: a page has a size")
        page = Page(limit, offset) if limit is not None else None
        bound = bind(named, parse_params(param or []))
        text = paged(text, page)
        store = open_store(home)
        try:
            result = execute(store, text, bound=bound,
                             allowed_services=allow_service or ())
            code = print_result(result, fmt, title=name or (str(file) if file else "query"),
                                page=page)
        finally:
            store.close()
    except CradleError as exc:
        fail(exc)
    except (OSError, SyntaxError, RuntimeError) as exc:  # raised while reading results
        fail(InputError(f"the query failed: {exc}"))
    if code:
        raise typer.Exit(code)


def install(app: typer.Typer) -> None:
    app.command("query")(query)
