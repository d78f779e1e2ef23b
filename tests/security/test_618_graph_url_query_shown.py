"""A graph store is named by its origin, never by a URL that may carry its key.

Finding (twenty-seventh review, outbound connections, left open by ``test_610``): a
remote graph store's URL (``CRADLE_GRAPH_URL``, the home's ``graph`` setting) may carry a
key of its own in its query (``…/sparql?key=…``, as hosted stores take one), and the
store's errors named it by that URL whole, only its user and password taken out
(``redact_url``): a store that could not be reached, refused the credentials or answered
too much had ``cannot reach the graph store `http://…/query?key=S3CRET`…`` printed, and
in ``graph follow``'s status (``not projected (retrying): …``, ``following the journal
into …``); a setting refused (credentials in clear, a port that is no number) showed the
query too.

Now the store is named by its origin wherever it is shown
(``environment_proxies.url_origin``: scheme, host, port — the model client's and the MCP
upstream's rule, ``test_610``, ``test_267``); the URL whole only reaches it. A setting's
message keeps a URL's path but not its query or fragment (``redact_url``).
"""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from cradle_kg.errors import GraphAuthError, GraphCredentialsInClearError, GraphUnreachableError
from cradle_kg.storage.graph_config import (
    GRAPH_URL_ENV,
    PLAIN_HTTP_OPT_IN_ENV,
    parse_setting,
    redact_url,
    resolve,
)
from cradle_kg.storage.sparql_http import SparqlHttpStore

from ..inprocess import run_cli
from .sparql_target import serving
from .test_80_store_watermark_ahead import _home

KEY = "QK-618-SECRET"


def _keyed(base: str) -> str:
    return " ".join(f"{part}={base}/{part}?key={KEY}" for part in ("query", "update", "store"))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("graph-query-key") / "home"
    _home(path, 1, "t")
    return path


@pytest.fixture()
def dead() -> Iterator[str]:
    """A loopback base URL nothing listens on."""
    with serving(BaseHTTPRequestHandler) as url:
        pass
    yield url


class Refusing(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = do_POST

    def log_message(self, *args: object) -> None:
        return None


def test_an_unreachable_store_is_named_without_its_key(dead: str) -> None:
    store = SparqlHttpStore(resolve(parse_setting(_keyed(dead))))
    try:
        assert KEY not in store.describe() and "127.0.0.1" in store.describe()
        with pytest.raises(GraphUnreachableError) as failed:
            store.projected_seq()
    finally:
        store.close()
    said = failed.value.message + (failed.value.hint or "")
    assert KEY not in said, said
    assert dead in said  # still named: its origin


def test_a_store_refusing_the_credentials_is_named_without_its_key() -> None:
    with serving(Refusing) as url:
        store = SparqlHttpStore(resolve(parse_setting(_keyed(url))))
        try:
            with pytest.raises(GraphAuthError) as failed:
                store.projected_seq()
        finally:
            store.close()
    assert KEY not in failed.value.message and url in failed.value.message, failed.value.message


def test_graph_follow_and_query_print_no_key(home: Path, dead: str) -> None:
    for command in (["graph", "follow", "--once"], ["query", "--sparql", "ASK {}"]):
        done = run_cli(*command, "--home", str(home), env={GRAPH_URL_ENV: _keyed(dead)})
        shown = done.stdout + done.stderr
        assert "unexpected" not in shown, shown
        assert dead in shown, shown  # the store was named, and failed
        assert KEY not in shown, shown


def test_a_refused_setting_shows_no_query(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PLAIN_HTTP_OPT_IN_ENV, raising=False)
    monkeypatch.setenv("CRADLE_GRAPH_TOKEN", "tok")
    with pytest.raises(GraphCredentialsInClearError) as failed:
        resolve(parse_setting(_keyed("http://kg.internal:7878")))
    assert KEY not in failed.value.message and "kg.internal" in failed.value.message
    for setting in (f"http://kg.internal:port/q?key={KEY}", f"http://kg.internal/q#{KEY}"):
        assert KEY not in redact_url(setting), redact_url(setting)
    done = run_cli("query", "--sparql", "ASK {}", "--home", str(home),
                   env={GRAPH_URL_ENV: f"http://kg.internal:port/q?key={KEY}"})
    assert done.returncode == 2 and done.stderr.startswith("error: graph setting"), done.stderr
    assert KEY not in done.stdout + done.stderr, done.stderr
