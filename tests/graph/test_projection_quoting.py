"""The projection's fast paths give the same text as the slow ones they replace: IRI
quoting (``quoted``: a translate table and a cache instead of ``urllib.parse.quote``) and
timestamps (``dt``, cached)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import quote

from cradle_kg.canonical import iso
from cradle_kg.graph.project import dt, quoted


def test_quoted_is_quote_with_nothing_safe() -> None:
    texts = ["", "acct-1", "run:mcp-1a2b", "a b/c?d#e%f", "agent:ledger-assistant",
             "".join(chr(i) for i in range(128)), "é", "zürich/✓", "\u0000\u007f",
             "policy:v1/@id(\"x\")", "~._-AZaz09"]
    texts += [chr(i) * 3 for i in range(160)]
    for text in texts:
        assert quoted(text) == quote(text, safe=""), repr(text)
        assert quoted(text) == quote(text, safe="")  # the cached answer too


def test_dt_is_the_same_for_the_same_instant_in_any_offset() -> None:
    moment = datetime(2026, 12, 1, 21, 0, 0, 120000, tzinfo=UTC)
    plus_two = moment.astimezone(timezone(timedelta(hours=2)))
    assert dt(iso(moment)) == dt(iso(plus_two)) == (
        '"2026-12-01T21:00:00.12Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>')
    assert dt(plus_two.isoformat()) == dt(iso(moment))
