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
  N-Quads refused.
"""

from __future__ import annotations

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


__all__ = ["escape", "is_iri"]
