"""An event's hash is the content hash of its header's canonical JSON: the header written key
by key (:func:`cradle_kg.storage.chain.event_hash`) must be that text byte for byte, for any
string a journal can hold — or every chain written before (and every other implementation)
would stop verifying."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cradle_kg.canonical import content_hash
from cradle_kg.storage.chain import event_hash

FIELDS = ("event_id", "run_id", "kind", "subject", "actor", "at", "payload_hash", "prev_hash")


def _reference(**kw: Any) -> str:
    return content_hash({"seq": kw["seq"], "idem_key": kw["idem_key"], "id": kw["event_id"],
                         "run_id": kw["run_id"], "kind": kw["kind"], "subject": kw["subject"],
                         "actor": kw["actor"], "at": kw["at"],
                         "payload_hash": kw["payload_hash"], "prev_hash": kw["prev_hash"]})


def _header(text: str, seq: int, idem_key: str | None) -> dict[str, Any]:
    return {**{f: f"{f}:{text}" for f in FIELDS}, "seq": seq, "idem_key": idem_key}


HOSTILE = ['"', "\\", "\n\r\t\b\f", "\x00\x01\x1f\x7f", "é漢字🙂", "\u2028\u2029",
           "</script>", "'", "\ufeff", ""]


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("idem_key", [None, "idem:abc", "key:\"x\"\n"])
def test_the_written_header_is_the_canonical_json(text: str, idem_key: str | None) -> None:
    header = _header(text, 12345, idem_key)
    assert event_hash(**header) == _reference(**header)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",))),
       seq=st.integers(min_value=0, max_value=2**62),
       idem_key=st.one_of(st.none(), st.text(alphabet=st.characters(
           blacklist_categories=("Cs",)))))
def test_any_text_hashes_as_the_canonical_json(text: str, seq: int,
                                               idem_key: str | None) -> None:
    header = _header(text, seq, idem_key)
    assert event_hash(**header) == _reference(**header)


def test_a_lone_surrogate_is_refused_as_the_canonical_form_refuses_it() -> None:
    header = _header("\ud800", 1, None)
    with pytest.raises(UnicodeEncodeError):
        _reference(**header)
    with pytest.raises(UnicodeEncodeError):
        event_hash(**header)


def test_other_types_take_the_general_encoder() -> None:
    class Id(str):
        pass

    header = {**_header("x", 7, None), "subject": Id("s")}
    assert event_hash(**header) == _reference(**header)
    flag = {**_header("x", True, None)}  # a bool is no seq, but it must hash as before
    assert event_hash(**flag) == _reference(**flag)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.datetimes(timezones=st.timezones()))
def test_iso_writes_the_text_every_hash_was_computed_over(moment: Any) -> None:
    """``iso`` (every time in a payload, a header, a hash) takes a fast path; its text must
    stay what ``strftime`` wrote when the chains already recorded were hashed — including a
    year before 1000, which glibc writes without leading zeros."""
    from datetime import UTC

    from cradle_kg.canonical import iso

    try:
        utc = moment.astimezone(UTC)
    except OverflowError:  # year 1 with a positive offset: no UTC form, raised either way
        with pytest.raises(OverflowError):
            iso(moment)
        return
    assert iso(moment) == utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)))
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_TEXT, inner, max_size=5),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(value=_JSON)
def test_canonical_json_is_the_historical_dumps_byte_for_byte(value: Any) -> None:
    """``canonical_json`` reuses one encoder (no circular check): its text must stay what
    ``json.dumps`` with the canonical options wrote when the first chains were hashed."""
    import json

    from cradle_kg.canonical import canonical_json

    assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"),
                                               ensure_ascii=False, allow_nan=False)


def _assembled(seq: int, prev_hash: str, **kw: Any) -> str:
    """The hash :func:`hash_parts`' pieces make, joined as ``cradle_append`` joins them."""
    from cradle_kg.canonical import sha256_bytes
    from cradle_kg.storage.chain import hash_parts

    pre, mid, post, tail = hash_parts(**kw)
    event_id = f"evt-{seq:010d}"
    return sha256_bytes(pre + f'"{event_id}"'.encode() + mid + f'"{prev_hash}"'.encode()
                        + post + str(seq).encode() + tail)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",))),
       seq=st.integers(min_value=1, max_value=2**62),
       idem_key=st.one_of(st.none(), st.text(alphabet=st.characters(
           blacklist_categories=("Cs",)))))
def test_the_pieces_sent_to_postgresql_make_the_same_hash(text: str, seq: int,
                                                          idem_key: str | None) -> None:
    """The PostgreSQL journal hashes on the server from pieces made here: joined around the
    id, the previous hash and the seq, they are the header's canonical JSON."""
    fields = {f: f"{f}:{text}" for f in ("run_id", "kind", "subject", "actor", "at",
                                          "payload_hash")}
    prev = "sha256:" + "ab" * 32
    assert _assembled(seq, prev, idem_key=idem_key, **fields) == event_hash(
        seq=seq, event_id=f"evt-{seq:010d}", prev_hash=prev, idem_key=idem_key, **fields)


@pytest.mark.parametrize("text", HOSTILE)
def test_the_pieces_of_hostile_text_make_the_same_hash(text: str) -> None:
    fields = {f: f"{f}{text}" for f in ("run_id", "kind", "subject", "actor", "at",
                                         "payload_hash")}
    for key in (None, text):
        assert _assembled(7, "sha256:" + "0" * 64, idem_key=key, **fields) == event_hash(
            seq=7, event_id="evt-0000000007", prev_hash="sha256:" + "0" * 64, idem_key=key,
            **fields)
