"""Named provenance queries: a catalog of SPARQL files, parameters bound as RDF terms.

A named query is one ``.rq`` file whose header comment says what it answers::

    # question: Why was this action allowed? ...
    # param action: action required - the action: its IRI, or its id (`act:...`)
    # example: cradle-kg query why-allowed --param action=act:5541...

The built-in queries live in ``queries/`` at the repository root; packs add theirs as a
``name -> path`` mapping (their manifest's ``queries:``), and users as extra folders.

Parameters are never spliced into the query text. Each value becomes an RDF term
(an IRI checked by Oxigraph, or a typed literal) and is handed to the engine as a
substitution (pyoxigraph ``substitutions=``, RDF-dev SEP-0007): a value holding quotes
or braces is just a value. The engine requires a substituted variable to be projected
by the query, so every declared parameter is a result column of its query.

Oxigraph executes ``SERVICE <url>`` by fetching the URL. :func:`check_query` (see
:mod:`.sparql_guard`: a decision on the parsed query) refuses a query that names one,
unless that endpoint is allow-listed, and refuses SPARQL Update outright: this module
only ever reads.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pyoxigraph as ox

from ..errors import InputError, QueryError, UnknownNameError
from ..isotime import parse_iso
from .iris import ID_BASE, RUN_BASE, node, run_graph
from .sparql_guard import MAX_QUERY_BYTES, MAX_QUERY_DEPTH, PLAIN_SHAPE, check_query, parse_shape
from .vocab import XSD_NS

if TYPE_CHECKING:  # a query worker imports this module: no journal, no records
    from ..storage.graph import GraphStore, QueryResult

# the queries live at the repository root beside the package, like the ontology
QUERIES_DIR: Final = Path(__file__).resolve().parents[2] / "queries"

Term = ox.NamedNode | ox.Literal

#: parameter kinds: how a command-line value becomes an RDF term
PARAM_KINDS: Final = ("iri", "string", "datetime", "integer", "action", "decision",
                      "approval", "identity", "task", "fact", "run")
#: the options and URL parameters that page a query's answers; no query parameter takes them
PAGE_PARAMS: Final = ("limit", "offset")
_ID_KINDS: Final = {"action": "action", "decision": "decision", "approval": "approval",
                    "identity": "agent", "task": "task", "fact": "fact"}

_HEADER: Final = re.compile(r"^#\s*(name|question|param|example|returns)\b\s*(.*)$")
_PARAM: Final = re.compile(r"^(\w+)\s*:\s*(\w+)\s+(required|optional)\s*(?:-\s*(.*))?$")


@dataclass(frozen=True)
class QueryParam:
    name: str
    kind: str
    required: bool
    description: str = ""


@dataclass(frozen=True)
class NamedQuery:
    name: str
    path: Path
    text: str
    question: str
    params: tuple[QueryParam, ...] = ()
    example: str = ""
    returns: str = ""
    #: where it came from: ``builtin``, a pack id, or a folder
    origin: str = "builtin"

    def param(self, name: str) -> QueryParam | None:
        return next((p for p in self.params if p.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "question": self.question, "example": self.example,
                "returns": self.returns, "origin": self.origin, "text": self.text,
                "params": [{"name": p.name, "kind": p.kind, "required": p.required,
                            "description": p.description} for p in self.params]}


def parse_header(name: str, path: Path, text: str, *, origin: str) -> NamedQuery:
    """Read the ``# question:``, ``# param``, ``# example:`` lines of a query file."""
    fields: dict[str, list[str]] = {}
    loose: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("#"):
            if line:
                break
            continue
        match = _HEADER.match(line)
        if match:
            fields.setdefault(match.group(1), []).append(match.group(2).lstrip(":").strip())
        elif line.lstrip("# ").strip():
            loose.append(line.lstrip("# ").strip())
    params = tuple(_param(name, path, spec) for spec in fields.get("param", []))
    question = " ".join(fields.get("question", [])) or " ".join(loose) or name
    return NamedQuery(name=name, path=path, text=text, question=question, params=params,
                      example=" ".join(fields.get("example", [])),
                      returns=" ".join(fields.get("returns", [])), origin=origin)


def _param(name: str, path: Path, spec: str) -> QueryParam:
    match = _PARAM.match(spec)
    if not match or match.group(2) not in PARAM_KINDS:
        raise QueryError(f"`{path}`: query `{name}`: bad parameter line `{spec}`",
                         hint="write `# param NAME: KIND required|optional - text`, KIND "
                              "one of " + ", ".join(PARAM_KINDS))
    if match.group(1) in PAGE_PARAMS:
        raise QueryError(f"`{path}`: query `{name}`: a parameter may not be named "
                         f"`{match.group(1)}`", hint="`limit` and `offset` page every query's "
                         "answers (`--limit`, `?limit=`): name it otherwise")
    return QueryParam(match.group(1), match.group(2), match.group(3) == "required",
                      (match.group(4) or "").strip())


#: the operators (of expressions and paths) a named query may hold: the queries shipped
#: here hold at most 14; the engine's parser ended the process past ~10,000 chained
#: (``tests/security/test_329``)
MAX_NAMED_OPERATORS = 1000


@dataclass
class QueryCatalog:
    """Named queries by name; later sources override earlier ones of the same name."""

    queries: dict[str, NamedQuery] = field(default_factory=dict)

    @classmethod
    def load(cls, dirs: Iterable[Path] = (), *, extra: Mapping[str, Path] | None = None,
             origin: str = "pack", builtin: bool = True,
             packs: Mapping[str, Mapping[str, Path]] | None = None) -> QueryCatalog:
        """Built-in queries, then folders, then ``extra`` (``name -> file``, from
        ``origin``), then ``packs`` (``pack id -> name -> file``, a manifest's queries)."""
        catalog = cls()
        if builtin:
            catalog.add_dir(QUERIES_DIR, origin="builtin")
        for folder in dirs:
            catalog.add_dir(folder, origin=str(folder))
        for name, path in (extra or {}).items():
            catalog.add_file(name, Path(path), origin=origin)
        for pack_id, files in (packs or {}).items():
            for name, path in files.items():
                catalog.add_file(name, Path(path), origin=pack_id)
        return catalog

    def add_dir(self, folder: Path, *, origin: str) -> None:
        if not folder.is_dir():
            raise UnknownNameError(f"no query folder at `{folder}`")
        for path in sorted(folder.glob("*.rq")):
            self.add_file(path.stem, path, origin=origin)

    def add_file(self, name: str, path: Path, *, origin: str) -> None:
        # pydantic comes with the input limits: not imported by the query workers' fork
        # server, which loads this module (tests/server/test_worker_lean.py)
        from ..inputs import read_text_file
        from .sparql_guard import check_size

        try:  # a FIFO in a query folder would block every `query` for ever
            text = read_text_file(path, max_bytes=MAX_QUERY_BYTES)
        except InputError as exc:
            raise QueryError(f"cannot read query `{name}`: {exc.message}") from None
        # INVARIANT: held to the endpoint's nesting cap and to MAX_NAMED_OPERATORS before
        # any parser runs it on this process's own stack: a pack's query of 12,000 `||`
        # (96 KB), reviewed `valid`, ended `cradle-kg query NAME` in a segmentation fault
        # (tests/security/test_329)
        try:
            check_size(text, max_operators=MAX_NAMED_OPERATORS)
        except QueryError as exc:
            raise QueryError(f"cannot read query `{name}`: {exc.message}",
                             hint=exc.hint) from None
        self.queries[name] = parse_header(name, path, text, origin=origin)

    def names(self) -> list[str]:
        return sorted(self.queries)

    def all(self) -> list[NamedQuery]:
        return [self.queries[n] for n in self.names()]

    def get(self, name: str) -> NamedQuery:
        try:
            return self.queries[name]
        except KeyError:
            raise UnknownNameError(f"unknown query `{name}`",
                                   hint="`cradle-kg query --list` lists them") from None


# --- parameters -------------------------------------------------------------------------


def term_for(kind: str, value: str) -> Term:
    """The RDF term a parameter value stands for; a bad value is a ``QueryError``."""
    try:
        if kind == "string":
            return ox.Literal(value)
        if kind == "integer":
            return ox.Literal(str(int(value)), datatype=ox.NamedNode(XSD_NS + "integer"))
        if kind == "datetime":
            parse_iso(value)
            return ox.Literal(value.replace("+00:00", "Z"),
                              datatype=ox.NamedNode(XSD_NS + "dateTime"))
        if kind == "iri":
            if not _looks_like_iri(value):
                raise ValueError("not an absolute IRI")
            return ox.NamedNode(value.removeprefix("<").removesuffix(">"))
        if value.startswith("<") or value.startswith(
                RUN_BASE if kind == "run" else f"{ID_BASE}{_ID_KINDS[kind]}/"):
            return ox.NamedNode(value.removeprefix("<").removesuffix(">"))
        # INVARIANT: any other value is an id, `urn:…` and `https://…` too: run and task
        # ids are the agent's, and one read as an IRI hid its run from the page's view or
        # showed another run's in its place (tests/security/test_387)
        if kind == "run":
            return ox.NamedNode(run_graph(value)[1:-1])
        return ox.NamedNode(node(_ID_KINDS[kind], value)[1:-1])
    except ValueError as exc:
        raise QueryError(f"parameter value `{value}` is not a valid {kind}: {exc}") from exc


def _looks_like_iri(value: str) -> bool:
    inner = value.removeprefix("<").removesuffix(">")
    return value.startswith("<") or inner.startswith((ID_BASE, RUN_BASE, "http://",
                                                      "https://", "urn:"))


# --- pages -------------------------------------------------------------------------------

#: the largest page, and the furthest a page may start
MAX_PAGE_LIMIT: Final = 1_000_000
MAX_PAGE_OFFSET: Final = 1_000_000_000_000
#: solution modifiers a page cannot be added after: the query's own LIMIT / OFFSET (two
#: are not SPARQL), a subquery's (ambiguous), a trailing VALUES (the page would have to
#: come before it). Read outside whole-line comments (a named query's header is prose)
_UNPAGEABLE: Final = re.compile(r"\b(limit|offset|values)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Page:
    """One page of a query's answers: at most ``limit`` solutions, from ``offset``."""

    limit: int
    offset: int = 0

    @property
    def next_offset(self) -> int:
        return self.offset + self.limit


def _count(name: str, value: str, *, least: int, most: int) -> int:
    if not (value.isascii() and value.isdigit()) or len(value) > 13:
        raise InputError(f"`{name}` must be a whole number, not `{value[:40]}`",
                         hint=f"from {least} to {most}")
    number = int(value)
    if not least <= number <= most:
        raise InputError(f"`{name}` must be from {least} to {most}, not {number}")
    return number


def read_page(values: Mapping[str, str]) -> Page | None:
    """The page ``limit`` / ``offset`` ask for (request parameters, as text); None for the
    whole answer. An offset needs a limit: an open-ended page has no size."""
    limit, offset = values.get("limit"), values.get("offset")
    if limit is None:
        if offset is not None:
            raise InputError("`offset` needs `limit`: a page has a size",
                             hint="e.g. limit=100&offset=200")
        return None
    return Page(_count("limit", limit, least=1, most=MAX_PAGE_LIMIT),
                _count("offset", offset or "0", least=0, most=MAX_PAGE_OFFSET))


def paged(text: str, page: Page | None) -> str:
    """``text`` with the page's ``LIMIT`` / ``OFFSET`` after its own solution modifiers
    (the query's ``ORDER BY`` orders the pages). A query that has its own ``LIMIT``,
    ``OFFSET`` or ``VALUES`` outside comments is refused a page rather than guessed at;
    the paged text is parsed and checked again like any query."""
    if page is None:
        return text
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    found = _UNPAGEABLE.search(code)
    if found is not None:
        raise QueryError(f"this query cannot be paged: it has its own "
                         f"`{found.group(1).upper()}`",
                         hint="ask without limit/offset, or write the page into the query")
    return f"{text}\nLIMIT {page.limit} OFFSET {page.offset}\n"


def adhoc_term(value: str) -> Term:
    """A value for a query without declared parameters: ``<iri>`` is an IRI, else a string."""
    if value.startswith("<") and value.endswith(">"):
        return term_for("iri", value)
    return ox.Literal(value)


def bind(query: NamedQuery | None, values: Mapping[str, str]) -> dict[str, Term]:
    """Turn ``name -> text`` values into ``name -> term``, checking declared parameters."""
    out: dict[str, Term] = {}
    for name, value in values.items():
        declared = query.param(name) if query else None
        if query is not None and declared is None:
            known = ", ".join(p.name for p in query.params) or "none"
            raise QueryError(f"query `{query.name}` has no parameter `{name}`",
                             hint=f"its parameters: {known}")
        out[name] = term_for(declared.kind, value) if declared else adhoc_term(value)
    missing = [p for p in (query.params if query else ()) if p.required and p.name not in out]
    if query is not None and missing:
        p = missing[0]
        raise QueryError(f"query `{query.name}` needs parameter `{p.name}`",
                         hint=f"--param {p.name}=... ({p.description or p.kind})")
    return out


def substitutions(bound: Mapping[str, Term]) -> dict[ox.Variable, Term]:
    return {ox.Variable(name): term for name, term in bound.items()}


# --- what a query may do ----------------------------------------------------------------

def execute(store: GraphStore, text: str, *, bound: Mapping[str, Term] | None = None,
            allowed_services: Iterable[str] = (), union: bool = True,
            default_graph: list[str] | None = None,
            named_graphs: list[str] | None = None, base_iri: str | None = None,
            network_sandboxed: bool = False, max_bytes: int = MAX_QUERY_BYTES,
            max_depth: int = MAX_QUERY_DEPTH, max_patterns: int | None = None,
            max_operators: int | None = None) -> QueryResult:
    """Check and run a query on any graph store; the results must be read on the calling
    thread.

    The dataset: ``default_graph`` / ``named_graphs`` when given (the protocol's
    ``default-graph-uri`` / ``named-graph-uri``); else the query's own FROM / FROM NAMED;
    else (``union``) the union of all graphs as the default graph.
    """
    shape = check_query(text, allowed_services=allowed_services, base_iri=base_iri,
                        network_sandboxed=network_sandboxed, max_bytes=max_bytes,
                        max_depth=max_depth, max_patterns=max_patterns,
                        max_operators=max_operators)
    try:
        return store.query(text, bound=bound, base_iri=base_iri,
                           union=union and not (shape is not None and shape.has_dataset),
                           default_graph=default_graph, named_graphs=named_graphs)
    except QueryError:
        if shape is PLAIN_SHAPE:  # not parsed before: an update is refused, not misread
            with contextlib.suppress(QueryError):
                parse_shape(text, base_iri=base_iri)
        raise


__all__ = ["PAGE_PARAMS", "PARAM_KINDS", "QUERIES_DIR", "NamedQuery", "Page", "QueryCatalog",
           "QueryParam", "adhoc_term", "bind", "check_query", "execute", "paged", "read_page",
           "substitutions", "term_for"]
