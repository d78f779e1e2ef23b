"""Reading RDF files and text into an rdflib Dataset, with errors that say where.

Named graphs are kept (TriG, N-Quads, JSON-LD); Turtle and N-Triples land in the
default graph. Every parse failure becomes an ``RdfParseError`` carrying the file and,
for the text formats, the line — rdflib reports the line for Turtle/TriG only inside
its message, and not at all for N-Triples/N-Quads, so both are recovered here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from cradle_kg.errors import InputError, InputTooLargeError, RdfParseError
from cradle_kg.inputs import FILE_LIMITS, load_json, read_text_file

if TYPE_CHECKING:  # rdflib is imported where a file is read: the format names (FORMATS,
    from rdflib import Dataset, Graph  # what every SHACL validation looks up) need none

__all__ = ["FORMATS", "guess_format", "read_rdf"]

#: accepted format names and aliases -> rdflib parser name
FORMATS: Final[dict[str, str]] = {
    "turtle": "turtle",
    "ttl": "turtle",
    "trig": "trig",
    "nt": "nt",
    "ntriples": "nt",
    "n-triples": "nt",
    "nquads": "nquads",
    "nq": "nquads",
    "n-quads": "nquads",
    "json-ld": "json-ld",
    "jsonld": "json-ld",
}

_EXTENSIONS: Final[dict[str, str]] = {
    ".ttl": "turtle",
    ".turtle": "turtle",
    ".trig": "trig",
    ".nt": "nt",
    ".nq": "nquads",
    ".jsonld": "json-ld",
    ".json": "json-ld",
}

# rdflib's notation3 parser (Turtle, TriG) puts "at line N of <...>" in its message
_N3_LINE: Final = re.compile(r"at line (\d+)")
# where the strict loader says a JSON document went wrong: ":line:column: message"
_AT_LINE: Final = re.compile(r":(\d+):(\d+): (.*)", re.S)
_LINE_BASED: Final = frozenset({"nt", "nquads"})
# a string this short, on one line, naming an existing file, is a path, not RDF text
_MAX_PATH_LEN: Final = 4096
#: the largest RDF file read (rdflib holds ~6 times a file's size while parsing it): the
#: largest document the runtime takes
MAX_RDF_FILE_BYTES: Final = FILE_LIMITS.max_bytes
_TOO_LARGE_HINT: Final = "validate a home's graph in its store: `cradle-kg validate --all`"


def read_union(files: Iterable[str | Path]) -> Graph:
    """The triples of several RDF files in one graph (named graphs merged); a file that
    does not parse raises :class:`RdfParseError` naming it and the line."""
    from rdflib import Graph

    graph = Graph()
    for path in files:
        for s, p, o, _ in read_rdf(path).quads((None, None, None, None)):
            graph.add((s, p, o))
    return graph


def guess_format(path: str | Path) -> str:
    """The rdflib parser name for a file, from its extension."""
    suffix = Path(path).suffix.lower()
    try:
        return _EXTENSIONS[suffix]
    except KeyError:
        raise RdfParseError(
            f"cannot tell the RDF format of extension `{suffix or '(none)'}`",
            file=str(path),
            hint="use .ttl .trig .nt .nq .jsonld, or pass format=",
        ) from None


def _normalise_format(format: str) -> str:
    try:
        return FORMATS[format.lower()]
    except KeyError:
        known = " ".join(sorted(FORMATS))
        raise RdfParseError(f"unknown RDF format `{format}`", hint=f"one of: {known}") from None


def _is_path(source: str | Path) -> bool:
    if isinstance(source, Path):
        return True
    if "\n" in source or len(source) > _MAX_PATH_LEN:
        return False
    try:
        return Path(source).is_file()
    except OSError:  # e.g. a name too long for the filesystem: it was text after all
        return False


def read_rdf(
    source: str | Path,
    format: str | None = None,
    *,
    base: str | None = None,
) -> Dataset:
    """Parse a file (a ``Path``, or a ``str`` naming an existing file) or RDF text.

    ``format`` defaults to the file extension; for text, to JSON-LD when the text
    starts with ``{`` or ``[`` and to TriG (which reads Turtle and N-Triples) otherwise.
    N-Quads text needs ``format="nquads"``.
    """
    if _is_path(source):
        path = Path(source)
        fmt = _normalise_format(format) if format else guess_format(path)
        try:
            text = read_text_file(path, max_bytes=MAX_RDF_FILE_BYTES)
        except InputError as exc:
            raise RdfParseError(exc.message.removeprefix(f"`{path}`: "), file=str(path),
                                hint=_TOO_LARGE_HINT if isinstance(exc, InputTooLargeError)
                                else None) from None
        return _parse(text, fmt, file=str(path), base=base or path.resolve().as_uri())
    text = str(source)
    if format:
        fmt = _normalise_format(format)
    else:
        fmt = "json-ld" if text.lstrip()[:1] in ("{", "[") else "trig"
    return _parse(text, fmt, file=None, base=base)


def _parse(text: str, fmt: str, *, file: str | None, base: str | None) -> Dataset:
    if fmt == "json-ld":
        _check_json_ld(text, file=file)
    from rdflib import Dataset

    ds = Dataset()
    try:
        ds.parse(data=text, format=fmt, publicID=base)
    except Exception as exc:  # rdflib raises many unrelated types; all mean "bad input"
        message, line = _locate(exc, text, fmt)
        raise RdfParseError(message, file=file, line=line) from exc
    return ds


def _check_json_ld(text: str, *, file: str | None) -> None:
    """JSON-LD is read as the strict loader reads JSON, with its contexts written inline.

    rdflib's reader fetches a context named by a URL or a path (``"@context":
    "http://…"``, ``"file:///…"``, ``"ctx.json"``, ``"@import"``) with ``urlopen`` and no
    time limit: a pack ``pack validate`` was asked to review — or any JSON-LD file given to
    ``validate`` — made this process send requests of its choosing, read local files, and
    hang for ever on a server that never answers (``tests/security/test_64``); and it took
    a key given twice last-wins. Nothing is fetched: such a document is refused."""
    source = file or "JSON-LD"
    try:
        document = load_json(text, limits=FILE_LIMITS, source=source)
    except InputError as exc:
        message = exc.message.removeprefix(f"`{source}`")
        at = _AT_LINE.match(message)  # ":4:1: not valid JSON: …" — where, when it is known
        raise RdfParseError(f"{at.group(3)} (column {at.group(2)})" if at
                            else message.removeprefix(": "),
                            file=file, line=int(at.group(1)) if at else None) from None
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
            continue
        if not isinstance(value, dict):
            continue
        for key, item in value.items():
            named = ([item] if isinstance(item, str) else
                     [x for x in item if isinstance(x, str)] if isinstance(item, list) else [])
            if key == "@import" or (key == "@context" and named):
                where = (named or [str(item)])[0]
                raise RdfParseError(
                    f"`{key}` names a document to fetch (`{where[:200]}`): cradle-kg reads "
                    "JSON-LD with its context written inline and fetches nothing",
                    file=file, hint="copy the context's object into the document")
            stack.append(item)


def _locate(exc: Exception, text: str, fmt: str) -> tuple[str, int | None]:
    """A one-line message and the 1-based line of the error, when it can be known."""
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg.lower()} (column {exc.colno})", exc.lineno
    if fmt in _LINE_BASED:
        bad = _first_bad_line(text, fmt)
        if bad is not None:
            number, content = bad
            name = "N-Triples" if fmt == "nt" else "N-Quads"
            return f"invalid {name} statement: `{content.strip()[:120]}`", number
        return _first_line(exc), None
    match = _N3_LINE.search(str(exc))
    return _first_line(exc), int(match.group(1)) if match else None


def _first_bad_line(text: str, fmt: str) -> tuple[int, str] | None:
    # N-Triples / N-Quads put one statement per line, so each line parses on its own
    # and the first one that does not is where the error is. Only run on failure.
    from rdflib import Dataset

    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            Dataset().parse(data=line + "\n", format=fmt)
        except Exception:
            return number, line
    return None


def _first_line(exc: Exception) -> str:
    # rdflib messages run to several lines and echo the input; keep the first
    # meaningful line, lowercased per the error style guide
    for raw in str(exc).splitlines():
        line = raw.strip().removesuffix(" at ^ in:").rstrip(".: ")
        if line and not _N3_LINE.fullmatch(line) and not line.startswith("at line"):
            return line[:1].lower() + line[1:]
    return type(exc).__name__
