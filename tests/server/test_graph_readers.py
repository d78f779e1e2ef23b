"""``cradle-kg serve --graph-readers``: who may read the graph at ``/sparql`` and
``/queries/NAME``.

The graph holds argument values (the sixth attack review: a mail body, a recipient, a
password an agent was asked to set, for every proposal lineage traced) and every agent's
runs; by default anyone who reaches the server reads it. ``approvers`` answers only an
approver's token, ``tokens`` any token of the home (an agent's still declared and not
revoked); anything else is a 401 with a ``WWW-Authenticate`` challenge, before the query
is read — checked by the query workers on the port and by the app's own routes alike.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from cradle_kg.canonical import token_hash
from cradle_kg.config import load_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.home import Home
from cradle_kg.server.auth import issue_agent_token, revoke_agent_token
from cradle_kg.server.readers import GraphReaders, GraphReadGuard

from .conftest import DemoHome, Server, make_demo_home, start_server, stop_server

#: a module whose set-up is long (servers, browsers, packs built): run first
pytestmark = pytest.mark.slow

ASK = {"query": "ASK { ?s ?p ?o }"}
#: a loaded machine runs this module beside the rest of the suite: the app is built on its
#: first request, which httpx's default 5 s did not always wait for
HTTP = httpx.Client(timeout=60.0)
JSON = {"Accept": "application/sparql-results+json"}


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **JSON}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> DemoHome:
    return make_demo_home(tmp_path_factory.mktemp("readers") / "home")


@pytest.fixture(scope="module")
def agent_token(home: DemoHome) -> str:
    return issue_agent_token(Home(home.path), load_config(home.path / "config.json"), AGENT)


def _serve(home: DemoHome, who: str, tmp: Path) -> Server:
    return start_server(["--home", str(home.path), "--graph-readers", who], tmp / "serve.log",
                        home.path)


@pytest.fixture(scope="module")
def approvers_only(home: DemoHome, agent_token: str,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = _serve(home, "approvers", tmp_path_factory.mktemp("approvers"))
    yield srv
    stop_server(srv)


def test_approvers_only_read_the_graph(approvers_only: Server, agent_token: str) -> None:
    url = approvers_only.url
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic x"},
                    {"Authorization": "Bearer"}, {"Authorization": f"Bearer {agent_token}"}):
        for answer in (HTTP.get(url + "/sparql", params=ASK, headers=headers),
                       HTTP.post(url + "/sparql", data=ASK, headers=headers),
                       HTTP.get(url + "/queries/runs", headers=headers)):
            assert answer.status_code == 401, (headers, answer.text)
            assert answer.headers["www-authenticate"].startswith("Bearer")
            assert "approver's bearer token" in answer.text
    approver = _bearer(DEMO_TOKENS[APPROVER])
    assert HTTP.get(url + "/sparql", params=ASK, headers=approver).json()["boolean"] is True
    runs = HTTP.get(url + "/queries/runs", headers=approver)
    assert runs.status_code == 200 and runs.json()["results"]["bindings"]
    # what is not the graph is as before: the page, the list of questions, the health
    for path in ("/", "/queries", "/healthz"):
        assert HTTP.get(url + path).status_code == 200, path


def test_any_token_of_the_home_reads_when_tokens_may(home: DemoHome, agent_token: str,
                                                     tmp_path: Path) -> None:
    srv = _serve(home, "tokens", tmp_path)
    try:
        assert HTTP.get(srv.url + "/sparql", params=ASK).status_code == 401
        for token in (agent_token, DEMO_TOKENS[APPROVER]):
            answer = HTTP.get(srv.url + "/sparql", params=ASK, headers=_bearer(token))
            assert answer.status_code == 200, answer.text
        # a revoked token reads no more, at once (the token file is read on each request)
        assert revoke_agent_token(Home(home.path), AGENT)
        gone = HTTP.get(srv.url + "/queries/runs", headers=_bearer(agent_token))
        assert gone.status_code == 401 and "may not read" in gone.text
    finally:
        stop_server(srv)
        issue_agent_token(Home(home.path), load_config(home.path / "config.json"), AGENT)


def test_files_without_a_home_cannot_be_closed(tmp_path: Path) -> None:
    ttl = tmp_path / "g.ttl"
    ttl.write_text("<urn:a> <urn:b> <urn:c> .\n")
    done = subprocess.run([sys.executable, "-m", "cradle_kg", "serve", str(ttl), "--port", "0",
                           "--graph-readers", "approvers"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "needs a home" in done.stdout + done.stderr


def test_the_apps_own_graph_routes_are_guarded_alike() -> None:
    """The app answers `/sparql` and `/queries/NAME` too (behind the workers): the same
    readers, the same 401; a CORS preflight and the other routes pass."""
    app = Starlette(routes=[Route(p, lambda r: PlainTextResponse("ok"),
                                  methods=["GET", "POST", "OPTIONS"])
                            for p in ("/sparql", "/queries/runs", "/queries", "/api/x")])
    readers = GraphReaders(who="approvers",
                           approver_hashes=(token_hash(DEMO_TOKENS[APPROVER]),))
    client = TestClient(GraphReadGuard(app, readers))
    assert client.get("/sparql").status_code == 401
    assert client.get("/queries/runs").status_code == 401
    assert client.options("/sparql").status_code == 200
    assert client.get("/queries").status_code == 200
    assert client.get("/api/x").status_code == 200
    ok = client.get("/sparql", headers={"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"})
    assert ok.status_code == 200
    assert GraphReaders().refusal(None) is None  # anyone: the default

