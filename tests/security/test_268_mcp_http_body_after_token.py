"""The MCP gateway reads no body of a request whose token it does not know.

Finding: the strict JSON reader of ``mcp serve`` (and ``mcp proxy``) on HTTP runs before
the token is checked, for any request that says ``Authorization: Bearer …`` — whatever
follows. Anyone who reaches the port, with no token of the home, had the server read a 1
MiB body whole (the body budget of ``test_50`` bounds the memory, not the work) and parse
it with the strict loader on the server's event loop: a body of 340,000 small numbers is
some 0.4 s of parsing, during which no request of any agent is served — two clients sending
it again and again with ``Bearer nope`` took an agent's ``tools/list`` from 8 ms to 2.8 s
(median; 4.9 s at worst; 62 ms now). Its answer told it so: a malformed body was a ``400``
parse error, a wrong token never checked. Now the token is checked first: without a valid
one the answer is a 401 at once and the body is never read; with one, the body is read and
parsed as before.

A real ``cradle-kg mcp serve --transport streamable-http`` on 127.0.0.1, raw sockets.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from .mcp_http import ACCEPT, AGENT, Client, Served, fresh, half_sent, serve, token_for


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = fresh(tmp_path_factory.mktemp("mcp-token-first"), "home")
    for server in serve(home):
        server.tokens[AGENT] = token_for(home, AGENT)
        yield server


@pytest.mark.parametrize("token", ["nope", "ck_" + "x" * 43])
def test_no_body_is_read_for_a_token_of_no_one(served: Served, token: str) -> None:
    for framing in ("Content-Length: 1048576", "Transfer-Encoding: chunked"):
        answer = half_sent(served, "POST", framing, token)
        # before: nothing within 20 s — the server was reading the body, to parse it
        assert answer.startswith(b"HTTP/1.1 401"), (framing, answer[:300])
    malformed = httpx.post(served.url, content=b'{"jsonrpc": "2.0", "id": 1, "id": 2}',
                           headers={**ACCEPT, "Authorization": f"Bearer {token}"}, timeout=30)
    assert malformed.status_code == 401, malformed.text  # before: 400, a parse error


def test_an_agent_s_body_is_read_strictly_as_before(served: Served) -> None:
    client = Client(served.url, served.tokens[AGENT])
    twice = client.post_raw(b'{"jsonrpc": "2.0", "id": 7, "id": 8, "method": "tools/list"}')
    assert twice.status_code == 400 and "duplicate key" in twice.text, twice.text
    assert client.alive()
