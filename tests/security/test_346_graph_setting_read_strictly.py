"""The remote graph store's setting is read strictly, and its password is in no message.

Finding: ``CRADLE_GRAPH_URL`` (or ``"graph"`` in ``config.json``) may carry basic auth
as ``user:password@`` in its URLs, and the error about a setting that does not read
redacted only a part that *began* with ``http``: the three-endpoint form
(``query=http://u:PASSWORD@h/q update=…`` with ``store=`` missing or not HTTP), or a part
with a key mistyped (``Query=…``), was quoted whole — ``error: graph setting
`query=http://u:PASSWORD@h/q …`: not an http(s) URL`` — by every command that opens the
graph (``query``, ``export``, ``validate --all``, ``graph follow``, ``serve``: terminals,
CI logs, container logs). And a URL whose port is out of range or not a number, an IPv6
host with a user (its brackets were dropped as the user was taken out), or a
``CRADLE_GRAPH_TIMEOUT`` that is not a positive number (``abc``, ``nan``, ``-1``,
``inf``) ended each command in ``error: unexpected ValueError`` / ``OverflowError`` /
``InvalidURL``.

Now every part of a setting is redacted in a message (the user and password of a URL
after ``key=`` too), each URL is checked as it is resolved (host and port), the user is
taken out of an IPv6 URL with its brackets kept, and the timeout is a number of seconds
above 0 and at most 3,600: each a one-line ``error: graph setting …`` (exit 2), the
password never in it. The CLI runs in this process (``inprocess.run_cli``) on a real home.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.storage.graph_config import GRAPH_URL_ENV, parse_setting, redact_url, resolve

from ..inprocess import run_cli
from .test_80_store_watermark_ahead import _home

SECRET = "S3cretGr4ph"
SETTINGS = [
    f"query=http://u:{SECRET}@h/q update=http://u:{SECRET}@h/u",  # store= missing
    f"query=http://u:{SECRET}@h/q update=http://u:{SECRET}@h/u store=ftp://h/s",
    f"Query=http://u:{SECRET}@h/q update=http://h/u store=http://h/s",
    f"http://u:{SECRET}@h:7878 extra",
    f"http://u:{SECRET}@h:99999",
    f"http://u:{SECRET}@h:port",
    f"http://u:{SECRET}@[::1",
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("graph-setting") / "home"
    _home(path, 1, "t")
    return path


@pytest.mark.parametrize("setting", SETTINGS)
def test_a_setting_that_does_not_read_hides_its_password(home: Path, setting: str) -> None:
    for command in (["query", "--sparql", "ASK {}"], ["export"], ["graph", "follow", "--once"]):
        done = run_cli(*command, "--home", str(home), env={GRAPH_URL_ENV: setting})
        assert done.returncode == 2, (setting, done.stdout, done.stderr)
        assert done.stderr.startswith("error: graph setting"), done.stderr
        assert "unexpected" not in done.stderr, done.stderr
        assert SECRET not in done.stdout + done.stderr, done.stderr


@pytest.mark.parametrize("timeout", ["abc", "nan", "-1", "0", "inf", "1e400", "86400"])
def test_a_timeout_that_is_no_duration_is_refused(home: Path, timeout: str) -> None:
    done = run_cli("query", "--sparql", "ASK {}", "--home", str(home),
                   env={GRAPH_URL_ENV: "http://127.0.0.1:9", "CRADLE_GRAPH_TIMEOUT": timeout})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: graph setting: `CRADLE_GRAPH_TIMEOUT`"), done.stderr


def test_redacted_parts_of_every_form() -> None:
    for setting in SETTINGS:
        assert SECRET not in redact_url(setting), setting
    assert redact_url("query=http://u:pw@h:1/q update=https://h/u") == \
        "query=http://h:1/q update=https://h/u"


def test_a_user_of_an_ipv6_store_keeps_its_host() -> None:
    remote = resolve(parse_setting(f"http://u:{SECRET}@[::1]:7878"))
    assert remote.query == "http://[::1]:7878/query"
    assert remote.basic == ("u", SECRET)
    remote = resolve(parse_setting("http://127.0.0.1:7878"))  # as before
    assert (remote.query, remote.basic, remote.timeout_s) == \
        ("http://127.0.0.1:7878/query", None, 30.0)
