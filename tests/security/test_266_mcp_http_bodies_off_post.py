"""A request to the MCP endpoint that is no POST carries no body.

Finding: ``test_50`` bounded the request bodies ``mcp serve`` holds at once (the strict
JSON reader's ``BodyBudget``), but only for a ``POST``: the SDK's session manager reads
*every* request's body whole before it looks at the method (its
``RequestBodyLimitMiddleware``, up to ``max_bytes``, 1 MiB), outside the budget. With its
own token an agent sent 200 ``PUT`` (or ``GET``, ``DELETE``) requests each declaring
1 MiB and sending all of it but the last byte: the server grew from 93 to 330 MB and held
it for as long as the connections stayed (the body deadline, 60 s, then again); 200 such
``POST``\\ s grow it to 163 MB. Now a request that is no ``POST`` and declares a body
(``Content-Length`` above 0, or ``Transfer-Encoding``) is a 413 at once, its body never
read, and the connection closed; a ``GET`` (the event stream) or ``DELETE`` without one is
served as before.

A real ``cradle-kg mcp serve --transport streamable-http`` on 127.0.0.1, raw sockets.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .mcp_http import AGENT, Client, Served, fresh, half_sent, serve, token_for

DECLARED = 1024 * 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = fresh(tmp_path_factory.mktemp("mcp-bodies"), "home")
    for server in serve(home):
        server.tokens[AGENT] = token_for(home, AGENT)
        yield server


@pytest.mark.parametrize("method", ["PUT", "GET", "DELETE", "PATCH"])
def test_a_body_that_is_no_post_s_is_refused_unread(served: Served, method: str) -> None:
    for framing in (f"Content-Length: {DECLARED}", "Transfer-Encoding: chunked"):
        answer = half_sent(served, method, framing, served.tokens[AGENT])
        # before: nothing within 20 s: the SDK was reading the 1 MiB (outside the budget)
        assert answer.startswith(b"HTTP/1.1 413"), (method, framing, answer[:200])
        assert b"carries no body" in answer


def test_the_stream_and_the_end_of_a_session_are_served_as_before(served: Served) -> None:
    client = Client(served.url, served.tokens[AGENT])
    with client.http.stream("GET", served.url, headers={
            **client.headers, "Accept": "text/event-stream"}) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
    assert client.alive()
    ended = client.http.delete(served.url, headers={**client.headers, "Content-Length": "0"})
    assert ended.status_code == 200, ended.text
    assert client.post_json({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
                            ).status_code == 404
