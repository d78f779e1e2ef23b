"""Untrusted input: the one strict JSON loader and the size and shape limits.

Everything an agent or a user hands the runtime as JSON — a proposal on the command line,
on stdin or over HTTP, a pack example, an approval decision — goes through
:func:`load_json`, and every value that reaches a record through :func:`check_value`.
Both refuse, with one line naming the offending place, what would otherwise crash the
parser, bloat the journal or be recorded differently from how it was submitted:

* more bytes than ``max_bytes`` (checked before anything is decoded);
* nesting deeper than ``max_depth`` (counted by a flat scan *before* the recursive
  decoder runs, so a 30,000-deep array cannot raise ``RecursionError``);
* duplicate object keys (no "last one wins");
* ``NaN``, ``Infinity``, and numbers that overflow to them (``1e999``);
* integers with more than ``max_integer_digits`` digits, floats with more than
  ``max_float_digits`` digits before or after the point once written out without an
  exponent (``1e40``, ``1e-300``): both at most 18, what every graph store holds as that
  number (:mod:`cradle_kg.graph.ntriples` says what was measured);
* lone UTF-16 surrogates (``"\\ud800"``), which no UTF-8 journal can store;
* strings longer than ``max_string_length``, object keys longer than ``max_id_length``.

The limits live in the home's configuration (``input_limits`` in ``config.json``); each
can be lowered or raised up to a hard :data:`CEILINGS` value that the record models
themselves enforce, so a journal written under one configuration is always readable.
The two number limits are bounded by the graph stores instead (18 digits): the record
models keep reading the wider numbers an earlier configuration may have let in.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from datetime import date, datetime
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import InputError, InputTooLargeError


class InputLimits(BaseModel):
    """How big and how deep untrusted input may be (``input_limits`` in ``config.json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    #: total size of one JSON document (a proposal, a request body), in UTF-8 bytes
    max_bytes: int = Field(default=1024 * 1024, gt=0)
    #: nesting of arrays and objects, counting the document itself as 1
    max_depth: int = Field(default=32, gt=2)
    #: ids, names and references: ``id``, ``task_id``, ``agent_id``, ``target``, keys, ...
    max_id_length: int = Field(default=256, gt=0)
    #: any other string, anywhere (arguments, fact objects, reasons)
    max_string_length: int = Field(default=64 * 1024, gt=0)
    #: decimal digits of an integer (18 always fits a signed 64-bit integer)
    max_integer_digits: int = Field(default=18, gt=0)
    #: digits of a float written out without an exponent, before the point and after it
    #: (``1e-7`` is ``0.0000001``: 7 after)
    max_float_digits: int = Field(default=18, gt=0)
    #: ``facts`` of one proposal
    max_facts: int = Field(default=1000, ge=0)
    #: ``evidence_refs`` of one proposal
    max_evidence_refs: int = Field(default=256, ge=0)
    #: ``alternatives`` of one proposal
    max_alternatives: int = Field(default=16, ge=0)
    #: what one tool call answered, as canonical JSON in UTF-8 bytes (past it, the output
    #: is not journaled: its hash and size are, and the call fails its output check)
    max_output_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    #: evidence blobs one identity may add through ``POST /api/evidence`` or ``evidence
    #: add`` in any hour (a sliding window, counted from the journal), and their bytes:
    #: every blob journaled under that identity in the hour counts (None: no limit; 0:
    #: none). Not bounded by a ceiling: a quota, not the shape of a record
    evidence_uploads_per_hour: int | None = Field(default=1000, ge=0)
    evidence_bytes_per_hour: int | None = Field(default=256 * 1024 * 1024, ge=0)
    #: what one agent may have waiting for a person at once: the approvals its actions
    #: asked for (not yet decided) and the human steps of its workflow's runs (not yet
    #: answered); past it, a proposal that would ask for one more approval, or a run of its
    #: workflow its token starts, is refused, nothing journaled, until a person decides
    #: some (None: no limit). A quota, not a ceiling
    waiting_per_agent: int | None = Field(default=256, ge=0)
    #: proposals of one agent that gate 1 denies or sends back (``deny``, ``clarify``,
    #: ``repair``) in any hour, each journaled whole: past it, the next one is refused
    #: without journaling it (``quota_exceeded``) until the hour frees up; counted from the
    #: journal's usage buckets, again under its writer's lock (None: no limit; 0: none).
    #: A quota, not a ceiling
    refusals_per_agent_per_hour: int | None = Field(default=1000, ge=0)

    @model_validator(mode="after")
    def _within_ceilings(self) -> InputLimits:
        for name, ceiling in _CONFIGURABLE.items():
            if getattr(self, name) > ceiling:
                raise ValueError(f"`{name}` may be at most {ceiling}")
        return self


_CEILING_VALUES: dict[str, int] = {
    "max_bytes": 64 * 1024 * 1024,
    "max_depth": 100,
    "max_id_length": 4096,
    "max_string_length": 16 * 1024 * 1024,
    # what a record may hold: a journal written when a configuration could allow up to
    # 1,000 digits (Python refuses to parse more than 4,300), or before floats were bounded
    # (every finite float: 309 digits before the point, 324 after), stays readable
    "max_integer_digits": 1000,
    "max_float_digits": 400,
    "max_facts": 100_000,
    "max_evidence_refs": 10_000,
    "max_alternatives": 1000,
    "max_output_bytes": 256 * 1024 * 1024,
}

#: the most a configuration may set: the ceilings, but for the numbers, what every graph
#: store holds as that number (an integer of 19 digits may pass 2^63, which Virtuoso wraps
#: to a negative number and, past 2^64, refuses with the whole batch)
_CONFIGURABLE: dict[str, int] = {**_CEILING_VALUES, "max_integer_digits": 18,
                                 "max_float_digits": 18}

#: the defaults, documented in the README's security model
DEFAULT_LIMITS = InputLimits.model_construct()
#: what the record models enforce on their own: the most any configuration may allow (for
#: the two number limits, may have allowed: see ``_CEILING_VALUES``)
CEILINGS = InputLimits.model_construct(**_CEILING_VALUES)  # type: ignore[arg-type]

#: a float's repr has at most 17 significant digits: from 10^-k up it has at most 16 + k
#: digits after the point, so between ``low`` and ``top`` a float is within a limit of
#: 17 to 20 digits with no repr to read (the common case: one chained comparison)
_FLOAT_WINDOWS: dict[int, tuple[float, float]] = {
    digits: (10.0 ** (16 - digits), 10.0 ** digits) for digits in range(17, 21)}
_NO_WINDOW = (math.inf, 0.0)

_SURROGATE = re.compile("[\ud800-\udfff]")
#: what a location in a one-line message is not written with as it is
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
#: a JSON string (unrolled, so it cannot backtrack) or a bracket
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_OPENERS = frozenset("[{")


class _Refused(ValueError):
    """Raised from inside the decoder's hooks; turned into an :class:`InputError`."""


def load_json(data: str | bytes, *, limits: InputLimits = DEFAULT_LIMITS,
              source: str = "input") -> Any:
    """Decode one untrusted JSON document, or raise a one-line :class:`InputError`.

    ``source`` names the input in messages (a file name, ``stdin``, ``request body``).
    Too many bytes raise :class:`InputTooLargeError` (HTTP 413); anything else malformed
    or outside the limits raises :class:`InputError` (HTTP 422, CLI exit 2).
    """
    size = len(data) if isinstance(data, bytes) else _utf8_size(data)
    if size > limits.max_bytes:
        raise InputTooLargeError(f"`{source}`: {size} bytes is more than the limit of "
                                 f"{limits.max_bytes} bytes")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"`{source}`: not valid UTF-8 at byte {exc.start}") from None
    else:
        text = data
    _check_depth(text, limits, source)
    try:
        value = json.loads(text, object_pairs_hook=_object, parse_constant=_constant,
                           parse_float=_float, parse_int=_integer(limits))
    except _Refused as exc:
        raise InputError(f"`{source}`: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"`{source}`:{exc.lineno}:{exc.colno}: not valid JSON: "
                         f"{exc.msg.lower()}") from None
    except (RecursionError, ValueError) as exc:  # belt and braces: the scan should stop both
        raise InputError(f"`{source}`: not valid JSON: {_one_line(str(exc))}") from None
    check_value(value, limits=limits, where=source)
    return value


#: a JSON file an operator hands a command (a pack's data directory, the home's
#: ``config.json``): up to the largest document the runtime takes, otherwise the defaults
FILE_LIMITS = InputLimits.model_construct(max_bytes=_CEILING_VALUES["max_bytes"])


def open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor of ``path`` and its state, or a one-line :class:`InputError`: opened
    without blocking and checked on the descriptor to be a regular file (a FIFO or a
    device would block or never end; a folder is refused). The caller closes it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"`{path}`: cannot read: {exc.strerror or exc}") from None
    try:  # checked on the descriptor before it is wrapped: `open` refuses a folder's
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"`{path}`: not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_file(path: Path, *, max_bytes: int) -> bytes:
    """The bytes of a file an operator names (or a folder holds), or a one-line
    :class:`InputError` naming it: only a regular file is read — a FIFO or a device named
    like a data file would block or never end — and never more than ``max_bytes`` of it
    (checked on the open file before reading, :class:`InputTooLargeError` past it).

    The file is opened without blocking and checked on its descriptor, so it cannot be
    swapped for a FIFO between the check and the read.
    """
    fd, info = open_regular(path)
    try:
        if info.st_size > max_bytes:
            raise InputTooLargeError(f"`{path}`: {info.st_size} bytes is more than the "
                                     f"limit of {max_bytes} bytes")
        with open(fd, "rb", closefd=False) as handle:
            # what the file holds, one byte more (it grew since the check), not the limit:
            # a small file is not read into a buffer of the limit's size, and a limit as
            # large as ``sys.maxsize`` (a blob of the evidence store) is no allocation
            data = handle.read(min(max_bytes, info.st_size) + 1)
            # read on only when it grew (no extra read at the end of a file as checked)
            while info.st_size < len(data) <= max_bytes and (more := handle.read(
                    min(max_bytes + 1 - len(data), 1 << 20))):
                data += more
    except OSError as exc:
        raise InputError(f"`{path}`: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew since the check
        raise InputTooLargeError(f"`{path}`: more than the limit of {max_bytes} bytes")
    return data


def read_text_file(path: Path, *, max_bytes: int) -> str:
    """:func:`read_file`, decoded as UTF-8 (anything else: one line naming the byte)."""
    data = read_file(path, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"`{path}`: not UTF-8 at byte {exc.start}") from None


def load_json_file(path: Path, *, limits: InputLimits = FILE_LIMITS) -> Any:
    """Decode a JSON file with :func:`load_json`'s rules (no duplicate key, no ``NaN``,
    bounded depth, strings and numbers), or raise a one-line :class:`InputError`.

    The file is read by :func:`read_file`: a regular file of at most ``limits.max_bytes``.
    """
    data = read_file(path, max_bytes=limits.max_bytes)
    return load_json(data, limits=limits, source=str(path))


def check_value(value: Any, *, limits: InputLimits = DEFAULT_LIMITS, where: str = "input",
                depth: int = 1, encoded: bool = False) -> None:
    """Refuse a Python value that no JSON document within ``limits`` could have produced.

    Iterative, so a hostile (even cyclic) structure cannot exhaust the stack; ``depth`` is
    the nesting at which ``value`` sits inside its document. Leaves of other JSON-able
    types (datetimes, enums, models) are accepted as they are. ``encoded``: ``value`` as
    the journal's canonical JSON writes it (:func:`cradle_kg.canonical.canonical_json`) —
    a set as a sorted list, a dict's number keys as their text — not as a document read
    (a verifier's report: ``tests/security/test_482``).
    """
    bound = 10 ** limits.max_integer_digits
    digits = limits.max_float_digits
    low, top = _FLOAT_WINDOWS.get(digits, _NO_WINDOW)
    stack: list[tuple[Any, str, int]] = [(value, where, depth)]
    while stack:
        item, at, level = stack.pop()
        if isinstance(item, dict | list | tuple):
            if level > limits.max_depth:
                raise InputError(f"`{_short(at)}`: nested too deep (more than "
                                 f"{limits.max_depth} levels)")
            if isinstance(item, dict):
                numbers = encoded and _number_keys(item)
                for key, sub in item.items():
                    if not isinstance(key, str) and not numbers:
                        raise InputError(f"`{_short(at)}`: object keys must be strings")
                    if numbers:
                        stack.append((key, f"{at}", level))  # a number, checked as one
                    else:
                        _check_string(key, f"{at}", limits.max_id_length, "key")
                    stack.append((sub, f"{at}.{key}", level + 1))
            else:
                stack.extend((sub, f"{at}[{i}]", level + 1) for i, sub in enumerate(item))
        elif isinstance(item, str):
            _check_string(item, at, limits.max_string_length, "string")
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not -bound < item < bound:
                raise InputError(f"`{_short(at)}`: integer has more than "
                                 f"{limits.max_integer_digits} digits")
        elif isinstance(item, float):
            if not low <= abs(item) < top and item:
                _check_float(item, at, digits)
        elif encoded and isinstance(item, set | frozenset):
            if level > limits.max_depth:
                raise InputError(f"`{_short(at)}`: nested too deep (more than "
                                 f"{limits.max_depth} levels)")
            if not _sortable(item):
                raise InputError(f"`{_short(at)}`: a set of values of several kinds has no "
                                 "order to be written in")
            stack.extend((sub, f"{at}[{i}]", level + 1) for i, sub in enumerate(item))
        elif not isinstance(item, datetime | date | Enum | BaseModel):
            raise InputError(f"`{_short(at)}`: a value of type `{type(item).__name__}` has "
                             "no JSON form")


def _number_keys(item: dict[Any, Any]) -> bool:
    """Whether every key of ``item`` is a number (never a bool: JSON's encoder writes it
    ``true``), which the journal's encoder sorts and writes as its text; a dict mixing
    kinds it cannot sort ({1: …, "1": …}) or keyed otherwise is refused."""
    return bool(item) and all(type(k) in (int, float) for k in item)


def _sortable(items: set[Any] | frozenset[Any]) -> bool:
    """Whether the journal's encoder can write ``items`` (a set: as a sorted list)."""
    try:
        sorted(items)
    except TypeError:
        return False
    return True


def _check_float(value: float, where: str, limit: int) -> None:
    if not math.isfinite(value):
        raise InputError(f"`{_short(where)}`: `{value}` is not a JSON number")
    before, after = float_digits(value)
    if before > limit or after > limit:
        raise InputError(f"`{_short(where)}`: number `{value!r}` has more than {limit} digits "
                         f"{'before' if before > limit else 'after'} the decimal point "
                         "(written out without an exponent)")


def float_digits(value: float) -> tuple[int, int]:
    """Digits before and after the point of finite ``value``'s shortest ``repr`` written
    out without an exponent, trailing zeros after the point dropped: ``1e+16`` -> (17, 0),
    ``1.5e-07`` -> (1, 8), ``2.0`` -> (1, 0) — the form :func:`cradle_kg.graph.ntriples.decimal`
    writes."""
    mantissa, _, exp = float.__repr__(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    frac = frac.rstrip("0")
    shift = int(exp) if exp else 0  # an exponent's mantissa has one digit before the point
    if shift >= 0:
        return len(whole) + shift, max(0, len(frac) - shift)
    return 1, len(frac) - shift


def check_id(value: str | None, *, limits: InputLimits, where: str) -> None:
    """An id, name or reference: at most ``max_id_length`` characters, no lone surrogate,
    no NUL (an id is a key in every journal: PostgreSQL's ``text`` cannot hold U+0000, and
    a command line cannot pass it, so no backend or command could name such a record)."""
    if value is not None:
        _check_string(value, where, limits.max_id_length, "value")
        check_lookup(value, where=where)


def check_lookup(value: str | None, *, where: str) -> None:
    """A value a person names a record by, to be looked up (a run to filter by): refused as
    :func:`check_id` refuses what no journal can hold — a lone surrogate (a command-line
    byte that is not UTF-8), a NUL — whatever its length. Before, the journal's driver
    raised ``UnicodeEncodeError`` binding it (``error: unexpected …``:
    ``tests/security/test_600``)."""
    if value is not None:
        if _SURROGATE.search(value):
            raise InputError(f"`{_short(where)}`: value holds a lone surrogate (not valid "
                             "unicode)")
        if "\x00" in value:
            raise InputError(f"`{_short(where)}`: value holds a NUL character (U+0000), "
                             "which no id may hold")


#: the largest ``limit`` or ``offset`` of a page: what SQLite's and PostgreSQL's integers
#: (``bigint``) hold
MAX_PAGE_INTEGER = 2**63 - 1


def check_page(*, limit: int | None, offset: int) -> None:
    """A page's ``limit`` and ``offset`` as every journal can bind them, or an
    :class:`InputError` naming the one that is not: every paged listing checks here before
    it asks the journal (``runs``, ``approvals``, ``tasks``). Past 2^63 - 1, SQLite's
    driver raised ``OverflowError`` (``error: unexpected OverflowError``, an HTTP 500) and
    PostgreSQL blamed the journal (``bigint out of range``): ``tests/security/test_66``,
    ``test_96``."""
    for name, value in (("limit", limit), ("offset", offset)):
        if value is not None and not 0 <= value <= MAX_PAGE_INTEGER:
            raise InputError(f"`{name}`: `{value}` is not between 0 and {MAX_PAGE_INTEGER}")


def check_count(items: tuple[Any, ...] | list[Any], *, limit: int, where: str) -> None:
    if len(items) > limit:
        raise InputError(f"`{where}`: {len(items)} items is more than the limit of {limit}")


def _check_string(text: str, where: str, limit: int, what: str) -> None:
    if len(text) > limit:
        raise InputError(f"`{_short(where)}`: {what} of {len(text)} characters is longer than "
                         f"the limit of {limit}")
    if _SURROGATE.search(text):
        raise InputError(f"`{_short(where)}`: {what} holds a lone surrogate (not valid "
                         "unicode)")


def journal_text(text: str) -> str:
    """``text`` as a journal can hold it: a lone surrogate (a file name read from disk, an
    API's ``"\\udcff"``) written as its escape. Journaled raw, such a text — an exception's
    message, a pack's answer — raised ``UnicodeEncodeError`` out of ``submit``
    (``tests/security/test_471``, ``test_513``)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _short(where: str) -> str:
    """A location for a message, on one line: hostile keys can make it long, and can hold
    line breaks, control characters or lone surrogates — those are written as escapes."""
    text = _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"),
                            where)
    return text if len(text) <= 120 else text[:117] + "..."


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 200 else line[:197] + "..."


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _check_depth(text: str, limits: InputLimits, source: str) -> None:
    """Refuse nesting deeper than the limit, counted without recursion.

    Strings are skipped as whole tokens, so brackets inside them do not count. Up to the
    first syntax error this scan sees exactly the brackets the decoder would recurse on.
    """
    depth = 0
    for match in _TOKEN.finditer(text):
        char = match.group()[0]
        if char in _OPENERS:
            depth += 1
            if depth > limits.max_depth:
                raise InputError(f"`{source}`: nested too deep (more than {limits.max_depth} "
                                 "levels)")
        elif char != '"':
            depth -= 1


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"duplicate key `{_one_line(key)[:80]}`")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise _Refused(f"`{name}` is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"`{text[:40]}` is out of range for a number")
    return value


def _integer(limits: InputLimits) -> Any:
    def parse(text: str) -> int:
        digits = len(text) - (text[0] == "-")
        if digits > limits.max_integer_digits:
            raise _Refused(f"integer has {digits} digits, more than the limit of "
                           f"{limits.max_integer_digits} digits")
        return int(text)
    return parse


def check_human_input(limits: InputLimits, *, ids: dict[str, str | None],
                      texts: dict[str, str | None] | None = None) -> None:
    """What a person types (ids, a reason, a note) within ``limits``: checked before
    anything about it is journaled — a refusal is journaled too."""
    for where, value in ids.items():
        check_id(value, limits=limits, where=where)
    for where, text in (texts or {}).items():
        check_value(text, limits=limits, where=where)


class CappedLines:
    """A byte stream cut into its ``\\n``-ended lines (each with its ``\\n``) as chunks of it
    arrive, where a line that grows past ``cap`` bytes is dropped as it arrives, never
    buffered, and stands as ``None`` once its end has arrived. What reads a peer's or an
    operator's lines reads them through this: ``mcp serve``'s stdin
    (:func:`cradle_kg.integrations.mcp_server.capped_lines`), the proxy's upstream's stdout
    (:class:`cradle_kg.integrations.upstream_stdio.StdioClient`), ``worker``'s stdin
    (``tests/security/test_31``, ``test_75``).

    A line that ends in the same chunk that takes it past ``cap`` is given whole (at most
    one chunk longer): its reader checks the length, as the strict loader does."""

    def __init__(self, cap: int | None) -> None:
        self.cap = cap
        self._buffer = bytearray()  # a long line grows by appends: linear in its length
        #: inside a line already past the cap: skipped to its end
        self.dropping = False

    def feed(self, chunk: bytes) -> tuple[list[bytes | None], bool]:
        """The lines ``chunk`` ends (``None`` for one dropped), and whether the line it
        leaves open has just passed the cap."""
        out: list[bytes | None] = []
        if self.dropping:
            end = chunk.find(b"\n")
            if end < 0:
                return out, False
            self.dropping = False
            out.append(None)
            chunk = chunk[end + 1:]
        self._buffer += chunk
        if b"\n" in chunk:
            *lines, rest = bytes(self._buffer).split(b"\n")
            self._buffer = bytearray(rest)
            out += [line + b"\n" for line in lines]
        if self.cap is not None and len(self._buffer) > self.cap:
            self._buffer.clear()
            self.dropping = True
            return out, True
        return out, False

    def rest(self) -> bytes | None:
        """At the stream's end: the last line, unended (``b""``: none), or ``None`` when it
        was past the cap."""
        return None if self.dropping else bytes(self._buffer)
