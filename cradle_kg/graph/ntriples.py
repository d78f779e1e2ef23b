"""N-Triples terms written as text: the one writer of a string literal's body and the one
check of an IRI, for the projection (:mod:`.project`), the lineage triples
(:mod:`cradle_kg.lineage.rdf`) and the packs' terms (:mod:`.packproj`).

The text these make goes three ways — parsed as N-Quads by the embedded store, sent inside
``INSERT DATA`` / ``DELETE DATA`` to a remote store, compared byte for byte with a store's
export — so a term must read back as the value it was written from on every engine:

* a string is escaped exactly as Oxigraph writes it back (``\\b \\t \\n \\f \\r \\" \\\\``;
  other C0 controls, DEL, U+FFFE and U+FFFF as ``\\uXXXX``): a raw NUL cut Virtuoso's
  update text short ("unterminated string": the whole batch refused, and the graph stuck
  behind it), and a raw control character made the projection differ from the export;
* an IRI is checked by the parser that will read it (pyoxigraph's), not by a pattern: a
  term the pattern let through (``urn:x:%zz``, ``http://[::1``) made the whole batch's
  N-Quads refused;
* a number is written in a form every store holds as that number (:func:`decimal`,
  :func:`integer`): Python's ``repr`` of a float is not always an ``xsd:decimal``
  (``1e+16``, ``1e-07``), and past what the engines hold Virtuoso refused the whole batch
  (``1e+40``: "Can't convert to numeric"; an integer past 2^64), or stored another number
  (``1e-300`` as 0, 2^63 as -2^63), and Oxigraph kept a literal no numeric FILTER reads.

What the engines hold, measured (Virtuoso 7.2 open source, Oxigraph 0.5 embedded and
``oxigraph serve``): an ``xsd:decimal`` on Oxigraph is an i128 scaled by 10^18 — up to
18 digits after the point and about 1.7e20 before; Virtuoso's DECIMAL has 40 digits of
precision and a scale of 15 (a 16th digit after the point is rounded: ``1e-16`` is stored
as 0, ``0.30000000000000004`` as 0.3); an ``xsd:integer`` is a signed 64-bit integer on
both (Oxigraph keeps a longer one as a literal no numeric FILTER reads, Virtuoso wraps
2^63 to -2^63 and refuses 2^64). Hence :data:`DECIMAL_DIGITS` and :data:`INTEGER_RANGE`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Final

import pyoxigraph as ox

_SHORT: Final = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r",
                 '"': '\\"', "\\": "\\\\"}
#: what a string literal's body may not hold as it is: (char code -> its escape)
_ESCAPES: Final = {code: _SHORT.get(chr(code)) or f"\\u{code:04X}"
                   for code in (*range(0x20), 0x22, 0x5C, 0x7F, 0xFFFE, 0xFFFF)}


def escape(text: str) -> str:
    """The body of the N-Triples string literal of ``text`` (without the quotes)."""
    # INVARIANT: the same characters escaped the same way as Oxigraph's own writer, so a
    #   projection and a store's export compare byte for byte
    # most values (hashes, ids, kinds) have nothing to escape: C scans, no copy (what is
    # escaped is not printable; what else is not printable is left as it is)
    if text.isprintable() and '"' not in text and "\\" not in text:
        return text
    return text.translate(_ESCAPES)


@lru_cache(maxsize=4096)
def is_iri(text: str) -> bool:
    """``text`` is an absolute IRI the stores' parser reads (what goes between ``<>``)."""
    try:
        ox.NamedNode(text)
    except ValueError:
        return False
    return True


#: digits a decimal may have before its point, and after it, for every store to hold it as
#: that number: 18 before (the input limit of an integer's digits; Oxigraph holds ~20,
#: Virtuoso 40), 18 after (Oxigraph's scale: a 19th digit makes it a literal no numeric
#: FILTER reads; Virtuoso rounds past the 15th, which no bound can avoid without refusing
#: ordinary floats such as ``0.1 + 0.2``)
DECIMAL_DIGITS: Final = 18
#: the ``xsd:integer`` values every store holds as that number: a signed 64-bit integer
INTEGER_RANGE: Final = range(-(2 ** 63), 2 ** 63)


def decimal(value: float) -> str | None:
    """The ``xsd:decimal`` lexical form of ``value`` as Oxigraph writes it back, or
    ``None`` when no form is one every store holds as that number (NaN, an infinity, more
    than :data:`DECIMAL_DIGITS` digits before or after the point).

    The form is the shortest ``repr`` of the float written out without an exponent, in
    Oxigraph's canonical form (no trailing zero after the point, no point for a whole
    number, ``0`` for ``-0.0``): ``1e+16`` -> ``10000000000000000``, ``1.5e-07`` ->
    ``0.00000015``, ``2.5`` -> ``2.5``, ``5.0`` -> ``5``. Every engine holds ``5`` and
    ``5.0`` as the same term (an insert of one, then of the other, leaves one triple, and
    a ``DELETE DATA`` of either removes it: measured on all three), so a store written with
    ``5.0`` before holds what the projection writes now.
    """
    # INVARIANT: export == projection byte for byte (pyoxigraph writes this form back), and
    #   what is written is what each store holds (both sides within DECIMAL_DIGITS)
    text = float.__repr__(value)
    mantissa, _, exp = text.partition("e")
    if not exp:
        if not math.isfinite(value):
            return None
        whole, _, frac = mantissa.partition(".")
    else:  # d[.ddd]e±NN, the first digit not 0: move the point
        sign, digits = ("-", mantissa[1:]) if mantissa[0] == "-" else ("", mantissa)
        head, _, tail = digits.partition(".")
        digits, point = head + tail, len(head) + int(exp)
        if point <= 0:
            whole, frac = sign + "0", "0" * -point + digits
        else:
            whole, frac = sign + digits[:point] + "0" * (point - len(digits)), digits[point:]
    frac = frac.rstrip("0")
    if len(whole) - (whole[0] == "-") > DECIMAL_DIGITS or len(frac) > DECIMAL_DIGITS:
        return None
    if not frac:
        return "0" if whole == "-0" else whole
    return f"{whole}.{frac}"


def integer(value: int) -> str | None:
    """The ``xsd:integer`` lexical form of ``value``, or ``None`` when it is not one every
    store holds as that number (outside a signed 64-bit integer)."""
    return str(value) if value in INTEGER_RANGE else None


__all__ = ["DECIMAL_DIGITS", "INTEGER_RANGE", "decimal", "escape", "integer", "is_iri"]
