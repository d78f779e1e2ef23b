"""The projection's fast paths give the same text as the slow ones they replace: IRI
quoting (``quoted``: a translate table and a cache instead of ``urllib.parse.quote``) and
timestamps (``dt``, cached, the runtime's own form not reparsed; ``at``, from the
event's datetime) and literals (``lit``, nothing copied when there is nothing to escape)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import quote

import pytest

from cradle_kg.canonical import iso, parse_iso
from cradle_kg.graph.project import at, dt, lit, quoted

XSD = "http://www.w3.org/2001/XMLSchema#"


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


def _dt_by_text(text: str) -> str:
    """``dt`` as it was before its fast path: parse, to UTC, format, trim the fraction."""
    moment = parse_iso(text).astimezone(UTC)
    out = moment.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    return f'"{out}{"." + fraction if fraction else ""}Z"^^<{XSD}dateTime>'


def test_dt_and_at_give_the_text_the_general_path_gives() -> None:
    rng = random.Random(17)
    for _ in range(5000):
        moment = datetime(rng.randint(1001, 9998), rng.randint(1, 12), rng.randint(1, 28),
                          rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59),
                          rng.choice([0, 10, 120000, 999999, rng.randint(0, 999999)]),
                          tzinfo=timezone(timedelta(minutes=rng.randint(-900, 900))))
        text = iso(moment)  # the runtime's own form: dt's fast path
        assert at(moment) == dt(text) == _dt_by_text(text), text
        assert dt(moment.isoformat()) == _dt_by_text(moment.isoformat())  # the general path
    assert dt("2026-12-01T21:00:00.000000Z").endswith('"2026-12-01T21:00:00Z"^^<'
                                                     f"{XSD}dateTime>")


def test_dt_refuses_what_is_not_a_time_on_either_path() -> None:
    for bad in ("2026-13-01T21:00:00.000000Z", "2026-02-30T21:00:00.000000Z",
                "2026-12-01T25:00:00.000000Z", "2026-12-01T21:00:00.0000x0Z", "yesterday"):
        with pytest.raises(ValueError):
            dt(bad)
    with pytest.raises(ValueError):
        at(datetime(2026, 12, 1, 21, 0))  # naive


def test_lit_escapes_what_n_triples_needs_and_leaves_the_rest() -> None:
    assert lit("sha256:ab12") == '"sha256:ab12"'
    assert lit('a "b"\\c\nd\re') == '"a \\"b\\"\\\\c\\nd\\re"'
    assert lit(True) == f'"true"^^<{XSD}boolean>' and lit(3) == f'"3"^^<{XSD}integer>'
    assert lit(0.5) == f'"0.5"^^<{XSD}decimal>'
