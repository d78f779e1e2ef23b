"""The proxy's HTTP upstream transport (:mod:`cradle_kg.integrations.upstream_http`), part
by part: the event-stream cutter, and the rules on each answer (over httpx's
``MockTransport``: the upstream is the edge; ``tests/security/test_43`` runs the same
transport in a real proxy before a real server)."""

from __future__ import annotations

import json
from collections.abc import Callable

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cradle_kg.integrations.upstream_http import (
    AnswerRefused,
    CappedTransport,
    Events,
    within_origin,
)

URL = "http://upstream.test:8000/mcp"
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}


def event_ends(data: bytes) -> set[int]:
    """Where an event ends in ``data`` (after a blank line), read byte by byte; a blank
    line ended by ``\\r\\n`` ends it after the ``\\r`` or after the ``\\n``."""
    ends: set[int] = set()
    line, i = 0, 0
    while i < len(data):
        if data[i] in b"\r\n":
            crlf = data[i:i + 2] == b"\r\n"
            if line == 0:
                ends.update({i + 1, i + 2} if crlf else {i + 1})
            line, i = 0, i + (2 if crlf else 1)
        else:
            line, i = line + 1, i + 1
    return ends


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=120).map(
           lambda b: bytes(b"a:\r\n"[x % 4] for x in b)),
       st.lists(st.integers(min_value=1, max_value=9), max_size=40))
def test_events_are_passed_on_whole_and_in_order(data: bytes, cuts: list[int]) -> None:
    """The events come out as they went in, each cut after its blank line, and no whole
    event is held back."""
    ends, events = event_ends(data), Events()
    out, fed = bytearray(), 0
    while fed < len(data):
        chunk = data[fed:fed + (cuts.pop() if cuts else 7)]
        fed += len(chunk)
        done, over = events.feed(chunk, cap=1 << 20)
        assert not over
        out += done
        assert not done or len(out) in ends
        last = max((e for e in ends if e <= fed), default=0)
        assert len(out) >= last or (len(out) == last - 1 and len(out) in ends)
    assert bytes(out) + bytes(events.pending) == data


def test_an_event_past_the_cap_is_over_and_the_events_before_it_pass() -> None:
    events = Events()
    assert events.feed(b"data: 1\n\ndata: 2", cap=12) == (b"data: 1\n\n", False)
    assert events.feed(b"22\n\n", cap=12) == (b"data: 222\n\n", False)
    assert events.feed(b"data: 3\r\n\r\ndata: 4444444", cap=12) == (b"data: 3\r\n\r\n", True)
    events = Events()
    assert events.feed(b"data: 1\n\n" + b"data: 2\n" * 3 + b"\n", cap=12) == (
        b"data: 1\n\n", True)  # a whole event in the chunk, too long


def test_within_origin() -> None:
    base = httpx.URL("http://h.test/mcp")
    assert within_origin(base, httpx.URL("http://h.test/other"))
    assert within_origin(base, httpx.URL("https://h.test/mcp"))  # the upgrade
    assert not within_origin(base, httpx.URL("http://h.test:81/mcp"))
    assert not within_origin(base, httpx.URL("http://169.254.169.254/"))
    assert not within_origin(httpx.URL("https://h.test/"), httpx.URL("http://h.test/"))


Handler = Callable[[httpx.Request], httpx.Response]


def _send(handler: Handler, *, method: str = "POST", body: object = CALL,
          cap: int = 64, deadline: float = 5.0) -> httpx.Response:
    """One request through the transport in front of ``handler``, its body read."""
    async def go() -> httpx.Response:
        transport = CappedTransport(httpx.MockTransport(handler), httpx.URL(URL), cap=cap,
                                    deadline=deadline)
        async with httpx.AsyncClient(transport=transport) as client:
            response = await client.request(
                method, URL, json=body if method == "POST" else None)
            await response.aread()
            return response
    return anyio.run(go)


def _error(response: httpx.Response) -> str:
    answer = json.loads(response.content)
    assert response.status_code == 200 and answer["id"] == 7, answer
    return str(answer["error"]["message"])


def test_what_answers_a_request_and_is_not_passed_on_is_an_error_for_its_id() -> None:
    def redirect(to: str) -> Handler:
        return lambda r: httpx.Response(307, headers={"location": to})

    assert "limit of 64 bytes" in _error(_send(lambda r: httpx.Response(
        200, headers={"content-type": "application/json"}, content=b" " * 65)))
    assert "off the upstream's origin" in _error(_send(redirect("http://169.254.169.254/")))
    assert _send(redirect("/mcp/")).status_code == 307  # within: the SDK's to follow
    assert "compressed" in _error(_send(lambda r: httpx.Response(
        200, headers={"content-type": "application/json", "content-encoding": "br"})))
    assert "HTTP 502" in _error(_send(lambda r: httpx.Response(502)))
    assert "of type `text/html`" in _error(_send(lambda r: httpx.Response(
        200, headers={"content-type": "text/html"}, content=b"<p>")))

    def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    assert "ConnectError" in _error(_send(unreachable))
    ok = b'{"jsonrpc": "2.0", "id": 7, "result": {}}'
    passed = _send(lambda r: httpx.Response(200, headers={
        "content-type": "application/json", "content-length": str(len(ok))}, content=ok))
    assert passed.content == ok


def test_a_request_answered_late_fails_at_the_deadline() -> None:
    async def late(request: httpx.Request) -> httpx.Response:
        await anyio.sleep(30)
        raise AssertionError("not cut")

    assert "none within 0.2 s" in _error(_send(late, deadline=0.2))  # type: ignore[arg-type]


def test_a_notification_answered_with_an_error_is_taken_as_accepted() -> None:
    """The SDK ended the session on one (its writer task left)."""
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _send(lambda r: httpx.Response(500), body=notification).status_code == 202


def test_the_upstream_stream_is_refused_past_the_cap_or_off_origin() -> None:
    """The GET stream (no request, no deadline) ends in an error the SDK handles."""
    with pytest.raises(AnswerRefused, match="limit of 64 bytes"):
        _send(lambda r: httpx.Response(200, headers={"content-type": "text/event-stream"},
                                       content=b"data: " + b"x" * 100), method="GET")
    with pytest.raises(AnswerRefused, match="off the upstream's origin"):
        _send(lambda r: httpx.Response(307, headers={"location": "http://other.test/"}),
              method="GET")
