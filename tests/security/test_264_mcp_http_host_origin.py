"""The MCP gateway on streamable HTTP answers only its own names and the pages it is told.

Finding: the MCP specification (transport "Streamable HTTP", security warning) says a
server MUST validate the ``Origin`` of every request, against DNS rebinding, and
``cradle-kg serve`` has checked ``Host`` since ``test_51`` — but ``mcp serve --transport
streamable-http`` (and ``mcp proxy`` on HTTP) checked neither: a request naming
``Host: evil.example`` or sent by a page of ``https://evil.example`` was served like any
other (a session opened, tools listed and called). A page whose name its owner re-points at
127.0.0.1 reaches the gateway as its own origin; what stopped it was only the bearer token,
which a browser does not send by itself. Now the gateway answers, before the token is
read, only the names ``serve`` answers (on a loopback address ``localhost``, ``127.0.0.1``,
``::1``, and those of ``--allow-host``: any other ``Host`` is a 421) and, from a browser,
only a page of one of those names or of an origin ``--allow-origin`` names (any other
``Origin``, ``null`` included, is a 403); a client that sends no ``Origin`` (no browser
page) is answered as before.

Real ``cradle-kg mcp serve --transport streamable-http`` processes on 127.0.0.1, raw HTTP
(httpx sets ``Host`` and ``Origin`` as a browser would).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .mcp_http import ACCEPT, AGENT, INIT, Served, fresh, serve, token_for

EVIL = "https://evil.example"


def _init(served: Served, token: str | None = None, **headers: str) -> httpx.Response:
    auth = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.post(served.url, headers={**ACCEPT, **auth, **headers}, timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})


def _port(served: Served) -> str:
    return served.url.split(":")[2].split("/")[0]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = fresh(tmp_path_factory.mktemp("mcp-origins"), "home")
    for server in serve(home):
        server.tokens[AGENT] = token_for(home, AGENT)
        yield server


def test_a_rebound_host_name_is_refused_before_the_token(served: Served) -> None:
    token = served.tokens[AGENT]
    for host in (f"evil.example:{_port(served)}", "evil.example", "127.0.0.1.evil.example"):
        rebound = _init(served, token, Host=host)
        # before: 200 and an open session, as for the server's own name
        assert rebound.status_code == 421, (host, rebound.status_code, rebound.text[:200])
        assert "mcp-session-id" not in rebound.headers
        assert "evil.example" in rebound.text and "--allow-host" in rebound.text
        assert "mcp serve" in rebound.text
    assert _init(served, None, Host="evil.example").status_code == 421  # not a 401


def test_a_page_of_another_origin_is_refused(served: Served) -> None:
    token = served.tokens[AGENT]
    for origin in (EVIL, f"http://evil.example:{_port(served)}", "null",
                   "http://127.0.0.1.evil.example"):
        page = _init(served, token, Origin=origin)
        assert page.status_code == 403, (origin, page.status_code, page.text[:200])
        assert "mcp-session-id" not in page.headers
        assert "--allow-origin" in page.text
    assert _init(served, None, Origin=EVIL).status_code == 403


def test_its_own_names_and_clients_without_a_page_are_served(served: Served) -> None:
    token = served.tokens[AGENT]
    port = _port(served)
    for headers in ({}, {"Host": f"localhost:{port}"}, {"Host": f"LOCALHOST.:{port}"},
                    {"Host": f"[::1]:{port}"}, {"Origin": "http://localhost:6274"},
                    {"Origin": f"http://127.0.0.1:{port}"}, {"Origin": "http://[::1]:3000"}):
        own = _init(served, token, **headers)
        assert own.status_code == 200, (headers, own.status_code, own.text[:200])
        assert own.headers["mcp-session-id"]
    assert _init(served, None).status_code == 401  # the token is still asked


def test_the_names_and_origins_an_operator_adds(tmp_path: Path) -> None:
    home = fresh(tmp_path, "home")
    for server in serve(home, "--allow-host", "MCP.internal.", "--allow-origin",
                        "https://agents.example/"):
        token = token_for(home, AGENT)
        assert _init(server, token, Host="mcp.internal").status_code == 200
        assert _init(server, token, Origin="https://agents.example").status_code == 200
        assert _init(server, token, Origin="https://mcp.internal:8443").status_code == 200
        assert _init(server, token, Origin=EVIL).status_code == 403
        assert _init(server, token, Host="evil.example").status_code == 421


def test_the_rules_of_names_and_origins() -> None:
    from cradle_kg.server.hosts import allowed_origin, answered_names

    loop = answered_names("127.0.0.1", [])

    def scope(origin: bytes | None) -> dict[str, object]:
        return {"headers": [(b"origin", origin)] if origin is not None else []}

    assert allowed_origin(scope(None), (), loop) is None  # no page: not a browser's request
    assert allowed_origin(scope(b"http://LOCALHOST:9"), (), loop) is None
    assert allowed_origin(scope(b"https://evil.example"), (), loop) is not None
    assert allowed_origin(scope(b"https://evil.example"), ("*",), loop) is None
    assert allowed_origin(scope(b"null"), (), loop) is not None
    assert allowed_origin(scope(b"http://[::1"), (), loop) is not None  # no origin at all
    exposed = answered_names("0.0.0.0", [])
    assert exposed == ()  # any Host, as `serve` on such an address
    assert allowed_origin(scope(b"http://localhost:3000"), (), exposed) is not None
    assert allowed_origin(scope(b"https://a.example"), ("https://a.example",), exposed) is None


def test_the_proxy_on_http_answers_the_same_names(tmp_path: Path) -> None:
    from tests.integrations.test_mcp_proxy import CONTRACTS, UPSTREAM

    home = fresh(tmp_path, "home")
    (tmp_path / "up").mkdir()
    (tmp_path / "c.yaml").write_text(CONTRACTS)
    for proxy in serve(home, "--contracts", str(tmp_path / "c.yaml"), "--allow-origin",
                       "https://agents.example", verb="proxy",
                       tail=("--", sys.executable, str(UPSTREAM), str(tmp_path / "up"))):
        token = token_for(home, AGENT)
        assert _init(proxy, token).status_code == 200
        assert _init(proxy, token, Origin="https://agents.example").status_code == 200
        rebound = _init(proxy, token, Host="evil.example")
        assert rebound.status_code == 421 and "mcp proxy" in rebound.text
        assert _init(proxy, token, Origin=EVIL).status_code == 403
