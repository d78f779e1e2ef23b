"""A remote graph store's credentials are never sent in clear to another machine.

Finding (the twenty-first round): a remote SPARQL store configured with a user and
password (``"user"`` / ``"password_env"`` in the home's ``graph`` setting,
``CRADLE_GRAPH_USER`` / ``CRADLE_GRAPH_PASSWORD``, ``user:password@`` in a URL) or a
bearer token, over ``http://`` to a host that is not this machine, had every request
carry the password (base64, not hidden) or the token in clear, to anyone on the path.

Now such a setting is refused where it is read — ``config.json`` at load, the
environment when the store is opened — with ``graph_credentials_in_clear`` (exit 2)
naming the setting and the URL (never the password), before any request. Allowed: a
loopback host (127.0.0.0/8, ``::1``, ``localhost``), ``https://``, a store without
credentials, and an explicit opt-in (``"allow_plain_http_credentials": true`` in the
setting, ``CRADLE_GRAPH_ALLOW_PLAIN_HTTP_CREDENTIALS=1`` with ``CRADLE_GRAPH_URL``).
The allowed case runs against a real HTTP server on 127.0.0.1 that records what it got.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg.config import load_config
from cradle_kg.errors import GraphCredentialsInClearError
from cradle_kg.storage.graph_config import (
    GRAPH_URL_ENV,
    PLAIN_HTTP_OPT_IN_ENV,
    GraphEndpoints,
    parse_setting,
    resolve,
)
from cradle_kg.storage.sparql_http import SparqlHttpStore

from ..inprocess import run_cli
from .sparql_target import answering
from .test_80_store_watermark_ahead import _home

SECRET = "Gr4phS3cret"
FAR = "http://kg.internal:8890"
EMPTY = b'{"head":{"vars":["seq","journal"]},"results":{"bindings":[]}}'


def _endpoints(base: str, **extra: object) -> dict[str, object]:
    return {"query": f"{base}/sparql-auth", "update": f"{base}/sparql-auth",
            "store": f"{base}/sparql-graph-crud-auth", **extra}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("graph-in-clear") / "home"
    _home(path, 1, "t")
    return path


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in (GRAPH_URL_ENV, PLAIN_HTTP_OPT_IN_ENV, "CRADLE_GRAPH_USER",
                 "CRADLE_GRAPH_PASSWORD", "CRADLE_GRAPH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch


def _configured(home: Path, graph: object) -> Path:
    config = home / "config.json"
    data = json.loads(config.read_text("utf-8"))
    data["graph"] = graph
    config.write_text(json.dumps(data), "utf-8")
    return config


CONFIGS_IN_CLEAR = [
    _endpoints(FAR, user="cradle", password_env="GRAPH_PASSWORD"),
    _endpoints(FAR, token_env="GRAPH_TOKEN"),
    {**_endpoints("https://kg.internal"), "store": f"{FAR}/data", "user": "cradle"},
    f"http://cradle:{SECRET}@kg.internal:7878",
    _endpoints(f"http://cradle:{SECRET}@10.0.0.7:8890"),
]


@pytest.mark.parametrize("graph", CONFIGS_IN_CLEAR)
def test_a_config_sending_credentials_in_clear_is_refused_at_load(
        tmp_path: Path, graph: object, clean_env: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"graph": graph}), "utf-8")
    with pytest.raises(GraphCredentialsInClearError) as caught:
        load_config(config)
    message = caught.value.message
    assert "`graph`" in message and "in clear" in message, message
    assert "allow_plain_http_credentials" in (caught.value.hint or ""), caught.value.hint
    assert SECRET not in message + (caught.value.hint or "")
    assert caught.value.code == "graph_credentials_in_clear"


def test_the_cli_refuses_before_any_request(home: Path, clean_env: pytest.MonkeyPatch) -> None:
    config = _configured(home, _endpoints(FAR, user="cradle", password_env="GRAPH_PASSWORD"))
    before = config.read_text("utf-8")
    try:
        for command in (["query", "--sparql", "ASK {}"], ["graph", "follow", "--once"]):
            done = run_cli(*command, "--home", str(home), env={"GRAPH_PASSWORD": SECRET})
            assert done.returncode == 2, (done.stdout, done.stderr)
            assert "in clear" in done.stderr and "`graph`" in done.stderr, done.stderr
            assert "unexpected" not in done.stderr and SECRET not in done.stderr
    finally:
        config.write_text(json.dumps({k: v for k, v in json.loads(before).items()
                                      if k != "graph"}), "utf-8")


@pytest.mark.parametrize("env", [
    {GRAPH_URL_ENV: FAR, "CRADLE_GRAPH_USER": "cradle", "CRADLE_GRAPH_PASSWORD": SECRET},
    {GRAPH_URL_ENV: FAR, "CRADLE_GRAPH_TOKEN": SECRET},
    {GRAPH_URL_ENV: f"http://cradle:{SECRET}@kg.internal:7878"},
    {GRAPH_URL_ENV: f"query=https://kg.internal/q update=https://kg.internal/u "
                    f"store=http://cradle:{SECRET}@kg.internal/s"},
    {GRAPH_URL_ENV: "http://127.0.0.1.kg.internal:7878", "CRADLE_GRAPH_TOKEN": SECRET},
    {GRAPH_URL_ENV: "http://127.1:7878", "CRADLE_GRAPH_TOKEN": SECRET},
])
def test_environment_credentials_in_clear_are_refused(
        home: Path, env: dict[str, str], clean_env: pytest.MonkeyPatch) -> None:
    for name, value in env.items():
        clean_env.setenv(name, value)
    with pytest.raises(GraphCredentialsInClearError) as caught:
        resolve(parse_setting(env[GRAPH_URL_ENV]))
    assert SECRET not in caught.value.message
    done = run_cli("query", "--sparql", "ASK {}", "--home", str(home), env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: graph setting"), done.stderr
    assert "in clear" in done.stderr and SECRET not in done.stderr, done.stderr


@pytest.mark.parametrize("base", [
    "https://kg.internal", "http://localhost:7878", "http://LOCALHOST:7878",
    "http://127.0.0.1:7878", "http://127.8.9.10:7878", "http://[::1]:7878",
    "http://[::ffff:127.0.0.1]:7878"])
def test_loopback_or_tls_keeps_its_credentials(
        base: str, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("CRADLE_GRAPH_PASSWORD", SECRET)
    remote = resolve(GraphEndpoints.model_validate(_endpoints(base, user="cradle")))
    assert remote.basic == ("cradle", SECRET)


def test_the_opt_in_allows_it(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"graph": _endpoints(
        FAR, user="cradle", allow_plain_http_credentials=True)}), "utf-8")
    clean_env.setenv("CRADLE_GRAPH_PASSWORD", SECRET)
    graph = load_config(config).graph
    assert isinstance(graph, GraphEndpoints)
    assert resolve(graph).basic == ("cradle", SECRET)
    clean_env.setenv(PLAIN_HTTP_OPT_IN_ENV, "1")
    assert resolve(parse_setting(f"http://u:{SECRET}@kg.internal:7878")).basic == \
        ("u", SECRET)
    for value in ("yes", "2", "true "):
        clean_env.setenv(PLAIN_HTTP_OPT_IN_ENV, value)
        with pytest.raises(GraphCredentialsInClearError, match=PLAIN_HTTP_OPT_IN_ENV):
            resolve(parse_setting(f"http://u:{SECRET}@kg.internal:7878"))
        # read only where it is needed: over https the variable is not asked
        assert resolve(parse_setting(f"https://u:{SECRET}@kg.internal")).basic == \
            ("u", SECRET)
    clean_env.setenv(PLAIN_HTTP_OPT_IN_ENV, "0")
    with pytest.raises(GraphCredentialsInClearError):
        resolve(parse_setting(f"http://u:{SECRET}@kg.internal:7878"))


def test_no_credentials_over_http_is_as_before(clean_env: pytest.MonkeyPatch) -> None:
    remote = resolve(parse_setting(FAR))
    assert (remote.basic, remote.bearer) == (None, None)


def test_a_loopback_store_gets_the_credentials(clean_env: pytest.MonkeyPatch) -> None:
    """The allowed case against a real server on 127.0.0.1: the basic credentials arrive."""
    clean_env.setenv("CRADLE_GRAPH_PASSWORD", SECRET)
    seen: list[str] = []
    with answering(EMPTY, "application/sparql-results+json", seen=seen,
                   noting="Authorization") as base:
        store = SparqlHttpStore(resolve(GraphEndpoints.model_validate(
            {"query": f"{base}/query", "update": f"{base}/update", "store": f"{base}/store",
             "user": "cradle"})))
        try:
            assert store.projected_seq() == 0
        finally:
            store.close()
    expected = "Basic " + base64.b64encode(f"cradle:{SECRET}".encode()).decode()
    assert seen and set(seen) == {expected}, seen
