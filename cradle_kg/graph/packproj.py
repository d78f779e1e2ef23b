"""Pack projections: a pack's own domain records in the run's graph (issue 14).

A pack declares projectors (``@projection`` in :mod:`cradle_kg.packs.sdk`, listed in the
manifest's ``projections:``). Each is pure and deterministic like the core projection —
one journal event in, triples out, no clock, no uuid, no I/O — so incremental sync, a
rebuild and the commit-time check all see the same triples. The triples land in the
event's run graph, next to the core's.

What the runtime enforces on a projector's output (fail closed):

- each triple is three N-Triples terms (build them with :func:`iri`, :func:`literal`,
  :func:`core_node`); anything else is refused, so a value cannot smuggle a statement in;
- the subject is never a core object (``https://w3id.org/cradle/id/…``) nor a run graph:
  a pack links *to* the runtime's actions, decisions and facts, it never states anything
  *about* them — it cannot forge a verification or an approval; nor does it link to one
  with a term of the core vocabulary (a node of its own that ``cradle:checks`` a
  transition is a verification rule 3 reads);
- at commit, a projector that raises (or yields a bad triple) fails that commit, and the
  pack's shapes are validated with the integrity rules; elsewhere (a sync, a rebuild) the
  failure is recorded on the event as ``cradle:projectionFailed`` and the rest goes on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from ..errors import ProjectionError
from ..records import AuditEvent
from .ntriples import DECIMAL_DIGITS, INTEGER_RANGE, decimal, escape, integer, is_iri
from .vocab import CRADLE_NS, XSD_NS

#: one triple as N-Triples terms: ``("<s>", "<p>", "<o>" | '"lit"^^<dt>')``
Triple = tuple[str, str, str]
ProjectorBody = Callable[[AuditEvent], Iterable[Triple]]

CORE_ID_BASE = "https://w3id.org/cradle/id/"
_RUN_BASE = "https://w3id.org/cradle/run/"
PROJECTION_FAILED = f"<{CRADLE_NS}projectionFailed>"
#: the terms a pack's triple may not state about a core object, nor link to one with
_CORE = ("<" + CORE_ID_BASE, "<" + _RUN_BASE)
_CORE_TERM = "<" + CRADLE_NS
_XSD_DECIMAL = f"{XSD_NS}decimal"
_XSD_INTEGER = f"{XSD_NS}integer"
#: the lexical forms of the numbers a store holds as numbers (XSD 1.1, ASCII digits)
_NUMBERS = {_XSD_DECIMAL: re.compile(r"[+-]?(?=\.?[0-9])([0-9]*)(?:\.([0-9]*))?", re.ASCII),
            _XSD_INTEGER: re.compile(r"[+-]?[0-9]+", re.ASCII)}

_IRI_BODY = r"[^\x00-\x20<>\"{}|^`\\]+"
#: whole terms (``fullmatch``: a ``$`` would let a trailing line break through); the IRIs
#: are then checked by the stores' own parser (:func:`.ntriples.is_iri`)
_IRI = re.compile(rf"<({_IRI_BODY})>")
#: a literal's body as :func:`.ntriples.escape` writes it: no raw control character
_LITERAL = re.compile(r'"(?:[^"\\\x00-\x1f\x7f]|\\[tbnrf"\\\']|\\u[0-9A-Fa-f]{4}'
                      r'|\\U[0-9A-Fa-f]{8})*"'
                      rf"(?:\^\^<({_IRI_BODY})>|@[A-Za-z]+(?:-[A-Za-z0-9]+)*)?")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class PackProjector:
    """A registered projector: which pack, its name, the event kinds it reads."""

    pack: str
    name: str
    kinds: frozenset[str]
    body: ProjectorBody

    @property
    def ref(self) -> str:
        return f"{self.pack}/{self.name}"


# --- building terms (re-exported by the pack SDK) ------------------------------------------

def iri(text: str) -> str:
    """An IRI term ``<text>``; refused when ``text`` is not an absolute IRI."""
    if not isinstance(text, str) or not _SCHEME.match(text) or not _term_ok(f"<{text}>"):
        raise ProjectionError(f"`{str(text)[:80]}` is not an absolute IRI")
    return f"<{text}>"


def _term_ok(term: str, *, literal: bool = False) -> bool:
    """``term`` is one N-Triples IRI (or, with ``literal``, literal) every store reads."""
    found = _IRI.fullmatch(term)
    if found is None and literal:
        found = _LITERAL.fullmatch(term)
        if found is not None and found.group(1) is None:
            return True  # a plain or language-tagged literal: no IRI in it
        if found is not None and found.group(1) in _NUMBERS:
            return _number_ok(term[1:term.rindex('"')], found.group(1))
    return found is not None and is_iri(found.group(1))


def _number_ok(body: str, datatype: str) -> bool:
    """The body of an ``xsd:decimal`` / ``xsd:integer`` literal a projector wrote itself
    is one every store holds as that number (as :func:`literal` writes them): ``1e40``
    typed as a decimal made Virtuoso refuse the whole batch."""
    found = _NUMBERS[datatype].fullmatch(body)
    if found is None:
        return False
    if datatype == _XSD_INTEGER:
        return len(body) <= 24 and int(body) in INTEGER_RANGE
    whole, frac = found.group(1) or "", found.group(2) or ""
    return (len(whole.lstrip("0")) <= DECIMAL_DIGITS
            and len(frac.rstrip("0")) <= DECIMAL_DIGITS)


def literal(value: str | int | float | bool, datatype: str | None = None) -> str:
    """A literal term. Python booleans, integers and floats get ``xsd:boolean``,
    ``xsd:integer`` and ``xsd:decimal``; a string is a plain string unless ``datatype``
    (a full IRI, e.g. ``http://www.w3.org/2001/XMLSchema#date``) is given.

    A number is written in a form every store holds as that number
    (:func:`.ntriples.decimal`: ``1e+16`` as ``10000000000000000``); one no store holds
    (an integer outside 64 bits, a float with more than 18 digits before or after the
    point written out) raises :class:`ProjectionError` — the event is marked
    ``cradle:projectionFailed`` and the rest of the batch goes in."""
    if isinstance(value, bool):
        text, dt = ("true" if value else "false"), f"{XSD_NS}boolean"
    elif isinstance(value, int):
        text, dt = str(value), _XSD_INTEGER
        if datatype in (None, _XSD_INTEGER) and integer(value) is None:
            raise ProjectionError(f"the integer `{text[:40]}` is outside what every store "
                                  "holds (a signed 64-bit integer)")
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ProjectionError("a literal cannot be NaN or infinite")
        if datatype in (None, _XSD_DECIMAL):
            found = decimal(value)
            if found is None:
                raise ProjectionError(f"the number `{value!r}` has more than "
                                      f"{DECIMAL_DIGITS} digits before or after the point "
                                      "written out: no xsd:decimal every store holds")
            text, dt = found, _XSD_DECIMAL
        else:  # the pack's own datatype (xsd:double ...): its lexical form, as before
            text, dt = repr(value), _XSD_DECIMAL
    elif isinstance(value, str):
        text, dt = value, None
    else:
        raise ProjectionError(f"a literal is a string, number or boolean, not "
                              f"`{type(value).__name__}`")
    if datatype is not None:
        dt = datatype
    out = f'"{escape(text)}"'
    if dt is not None and dt != f"{XSD_NS}string":
        out += "^^" + iri(dt)
    return out


def core_node(kind: str, ident: str) -> str:
    """The IRI of a core object (``action``, ``decision``, ``proposal``, ``fact``,
    ``evidence``, ``verification`` …) — the same one the core projection writes."""
    if not re.match(r"^[a-z][a-z-]*$", kind):
        raise ProjectionError(f"`{kind[:40]}` is not a core object kind")
    return f"<{CORE_ID_BASE}{kind}/{quote(ident, safe='')}>"


# --- running projectors ---------------------------------------------------------------------

def _checked(triple: object, projector: PackProjector) -> str:
    if not (isinstance(triple, tuple) and len(triple) == 3
            and all(isinstance(t, str) for t in triple)):
        raise ProjectionError(f"projector `{projector.ref}` yielded `{str(triple)[:80]}`, "
                              "not a triple of N-Triples terms")
    s, p, o = triple
    if not _term_ok(s) or not _term_ok(p) or not _term_ok(o, literal=True):
        raise ProjectionError(f"projector `{projector.ref}` yielded a malformed term in "
                              f"`{s[:60]} {p[:60]} {o[:60]}`")
    if s.startswith(_CORE):
        raise ProjectionError(f"projector `{projector.ref}` states something about the "
                              f"core object {s[:80]}: a pack may link to core objects, "
                              "never describe them")
    # INVARIANT: the integrity rules read core terms towards a core object too (rule 3:
    # what `cradle:checks` a transition, rule 2: what `cradle:authorizes` a decision): a
    # pack node of its own saying so forged a verification or an approval
    # (tests/security/test_469)
    if o.startswith(_CORE) and p.startswith(_CORE_TERM):
        raise ProjectionError(f"projector `{projector.ref}` links {s[:60]} to the core "
                              f"object {o[:80]} with {p[:80]}, a term of the core "
                              "vocabulary: a pack links to core objects with its own "
                              "terms (or PROV's), never as the runtime's records do")
    return f"{s} {p} {o}"


def well_formed(triple: object) -> bool:
    """Three well-formed N-Triples terms (any subject: for a pack's knowledge graphs)."""
    return (isinstance(triple, tuple) and len(triple) == 3
            and all(isinstance(t, str) for t in triple)
            and _term_ok(triple[0]) and _term_ok(triple[1])
            and _term_ok(triple[2], literal=True))


def run_projector(projector: PackProjector, ev: AuditEvent) -> list[str]:
    """The checked triples of one projector for one event; raises on any failure."""
    try:
        produced = list(projector.body(ev))
    except ProjectionError:
        raise
    except Exception as exc:
        raise ProjectionError(f"projector `{projector.ref}` raised on event {ev.kind} "
                              f"#{ev.seq}: {type(exc).__name__}: {str(exc)[:200]}") from exc
    return [_checked(t, projector) for t in produced]


def pack_triples(ev: AuditEvent, projectors: Sequence[PackProjector], *,
                 strict: bool = False) -> list[str]:
    """The triples every projector interested in ``ev.kind`` adds, in registration order.

    ``strict`` (the commit-time check): a failure raises :class:`ProjectionError`.
    Otherwise it becomes one ``cradle:projectionFailed`` triple on the event's node — the
    same each time, since the projector is deterministic — and the others still run."""
    out: list[str] = []
    for projector in projectors:
        if ev.kind not in projector.kinds:
            continue
        try:
            out.extend(run_projector(projector, ev))
        except ProjectionError as exc:
            if strict:
                raise
            out.append(f"<{CORE_ID_BASE}event/{ev.seq}> {PROJECTION_FAILED} "
                       f"{literal(exc.message)}")
    return out


__all__ = ["PROJECTION_FAILED", "PackProjector", "ProjectionError", "ProjectorBody", "Triple",
           "core_node", "iri", "literal", "pack_triples", "run_projector", "well_formed"]
