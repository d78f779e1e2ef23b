"""How text is cut into tokens and values are compared (the normalisations lineage uses).

A value and the content it may come from are compared as sequences of whole tokens, after
the same normalisations on both sides:

* Unicode NFKC, then case folding (full-width letters and ``ALICE`` are ``alice``);
* an IBAN written in groups (``GB29 NWBK 6016 1331 9268 19``) is compacted to one token;
* thousands separators are dropped inside numbers (``30,000`` is ``30000``), as is a
  leading currency sign (``$30000``), and trailing decimal zeros (``10.00`` is ``10``,
  ``98.70`` is ``98.7``);
* punctuation around a token is not part of it (``'13'``, ``US13…,`` and ``(Alice)`` are
  ``13``, ``us13…`` and ``alice``; a quote ends a token unless it is an apostrophe between
  two letters, so ``'a@b.com'.The`` holds ``a@b.com``); punctuation inside one is
  (``mark.black-2134@gmail.com``, ``www.secure-systems-252.com/path``, ``friend's``).

Matching is by whole tokens: a value matches content when its tokens occur there
contiguously, so ``US1330000001212`` never matches inside ``US133000000121212121212``, and
``bob`` never matches ``bobby``.
"""

from __future__ import annotations

import re
import unicodedata

#: an IBAN written in groups of four (letters are already case-folded)
_GROUPED_IBAN = re.compile(
    r"\b([a-z]{2}\d{2})((?:[ \u00a0][a-z0-9]{4}){2,7}(?:[ \u00a0][a-z0-9]{1,3})?)\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
#: what separates tokens (besides whitespace)
_SPLIT = re.compile(r"(?:[\s,;!?()\[\]{}<>\"`|*\u2018\u201c\u201d]"  # separators
                    r"|(?<![^\W\d_])['\u2019]|['\u2019](?![^\W\d_]))+")  # a quote, no apostrophe
#: stripped from both ends of a token
_EDGE = ".:;'-_~=+#"
_NUMBER = re.compile(r"^[$€£]?[+-]?\d+(?:\.\d+)?$")
#: the end of a sentence: ., ! or ? before whitespace, or a blank line (a wrapped line
#: goes on: text is often wrapped at a fixed width)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n[ \t]*\n\s*")


def normalise(text: str) -> str:
    """NFKC and case folding, grouped IBANs compacted, thousands separators dropped."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _GROUPED_IBAN.sub(lambda m: m.group(1) + re.sub(r"\s", "", m.group(2)), text)
    return _THOUSANDS.sub("", text)


def _token(raw: str) -> str:
    token = raw.strip(_EDGE)
    if token and _NUMBER.match(token):
        token = token.lstrip("$€£")
        if "." in token:
            token = token.rstrip("0").rstrip(".")
    return token


def tokens(text: str) -> list[str]:
    """The normalised tokens of ``text``, in order."""
    return [t for t in (_token(r) for r in _SPLIT.split(normalise(text))) if t]


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` with a token (one ends at ``.!?`` + space, or a blank line)."""
    return [s for s in _SENTENCE_END.split(text) if tokens(s)]


def number_token(value: int | float) -> str:
    """A number as a token: ``10.0`` and ``10`` are both ``10``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return _token(repr(value) if isinstance(value, float) else str(value))


def is_identifier(token: str) -> bool:
    """A token that names something on its own: an address, IBAN, URL, file name, code.

    At least five characters with a digit, an ``@``, a ``/``, or a dot between letters.
    Inside a free-text argument these are traced one by one.
    """
    if "@" in token or "/" in token:
        return len(token) > 3
    if re.search(r"[a-z0-9]\.[a-z]", token):
        return True
    return len(token) >= 5 and any(c.isdigit() for c in token)
