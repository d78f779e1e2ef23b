"""A web page the user visits cannot read the provenance graph through their browser.

Finding: ``cradle-kg serve`` answered every origin with ``Access-Control-Allow-Origin: *``
(for a YASGUI page served elsewhere) and answered any ``Host``. ``/sparql`` and
``/queries/*`` need no token — the README's rule is to bind them only where everyone who
can reach them may read the provenance of every run (127.0.0.1 by default). But the
user's browser can reach 127.0.0.1 for any site it visits: a page of ``evil.example``
could ``fetch("http://127.0.0.1:7878/sparql?query=...")`` and read every run's agents,
targets and decisions (CORS said it may), and a page whose name its owner re-points at
127.0.0.1 (DNS rebinding) reads it as its own origin, CORS or not. Now CORS is off unless
``--cors-origin`` names an origin (``*`` restores the old rule), and a server bound to a
loopback address answers only to its loopback names (``localhost``, ``127.0.0.1``,
``::1``) and those ``--allow-host`` adds: another ``Host`` is a 421 — for every route, the
page and the API included.

Real ``cradle-kg serve`` processes on 127.0.0.1 and raw HTTP (httpx lets a test set
``Origin`` and ``Host`` as a browser would).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import oneshot

from ..server.conftest import Server, make_demo_home, start_server, stop_server

EVIL = "https://evil.example"
ASK = {"query": "ASK {}"}


@pytest.fixture(scope="module")
def default_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = make_demo_home(tmp_path_factory.mktemp("origins") / "home")
    srv = start_server(["--home", str(home.path)], tmp_path_factory.mktemp("log") / "s.log",
                       home.path)
    yield srv
    stop_server(srv)


def test_another_origin_is_not_told_it_may_read(default_server: Server) -> None:
    got = oneshot.post(default_server.sparql, data=ASK, headers={"Origin": EVIL})
    assert got.status_code == 200
    assert "access-control-allow-origin" not in got.headers
    for path in ("/queries", "/healthz", "/api/runs"):
        answer = oneshot.get(default_server.url + path, headers={"Origin": EVIL})
        assert "access-control-allow-origin" not in answer.headers, path
    preflight = oneshot.options(default_server.sparql, headers={
        "Origin": EVIL, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers


@pytest.mark.parametrize("path", ["/sparql?query=ASK%7B%7D", "/queries", "/healthz",
                                  "/api/runs", "/"])
def test_a_rebound_host_name_is_refused_on_every_route(default_server: Server,
                                                       path: str) -> None:
    port = default_server.url.rsplit(":", 1)[1]
    rebound = oneshot.get(default_server.url + path, headers={"Host": f"evil.example:{port}"})
    assert rebound.status_code == 421, (path, rebound.status_code, rebound.text[:200])
    assert "evil.example" in rebound.text and "--allow-host" in rebound.text
    for name in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost", f"[::1]:{port}"):
        own = oneshot.get(default_server.url + path, headers={"Host": name})
        assert own.status_code != 421, (path, name)


def test_named_origins_and_hosts_are_answered(tmp_path_factory: pytest.TempPathFactory
                                              ) -> None:
    home = make_demo_home(tmp_path_factory.mktemp("named") / "home")
    srv = start_server(["--home", str(home.path), "--cors-origin", "https://yasgui.example",
                        "--allow-host", "sparql.internal"],
                       tmp_path_factory.mktemp("log") / "s.log", home.path)
    try:
        allowed = oneshot.post(srv.sparql, data=ASK, headers={"Origin": "https://yasgui.example"})
        assert allowed.headers["access-control-allow-origin"] == "https://yasgui.example"
        other = oneshot.post(srv.sparql, data=ASK, headers={"Origin": EVIL})
        assert "access-control-allow-origin" not in other.headers
        proxied = oneshot.post(srv.sparql, data=ASK, headers={"Host": "sparql.internal"})
        assert proxied.status_code == 200 and proxied.json()["boolean"] is True
        assert oneshot.post(srv.sparql, data=ASK, headers={"Host": "evil.example"}
                          ).status_code == 421
    finally:
        stop_server(srv)


def test_the_names_a_server_answers_to() -> None:
    from cradle_kg.server.hosts import allowed_host, answered_names, loopback_bind

    assert loopback_bind("127.0.0.1") and loopback_bind("::1") and loopback_bind("localhost")
    assert not loopback_bind("0.0.0.0") and not loopback_bind("192.168.1.4")
    assert answered_names("127.0.0.1", ["Proxy.Internal."]) == (
        "localhost", "127.0.0.1", "::1", "proxy.internal")
    assert answered_names("0.0.0.0", []) == ()  # exposed on purpose: any name
    loop = answered_names("127.0.0.1", [])

    def scope(host: bytes | None) -> dict[str, object]:
        return {"headers": [(b"host", host)] if host is not None else []}

    assert allowed_host(scope(b"LOCALHOST:7878"), loop) is None
    assert allowed_host(scope(b"[::1]:7878"), loop) is None
    assert allowed_host(scope(None), loop) is None  # HTTP/1.0: no browser sends that
    assert allowed_host(scope(b"127.0.0.1.evil.example"), loop) is not None
    assert allowed_host(scope(b"evil.example"), ()) is None  # no names: any
