"""The credentials in an upstream's URL reach neither the agent nor the journal.

Finding: ``cradle-kg mcp proxy --upstream URL`` takes no header to send its upstream, so
a hosted MCP server's key is given in the URL — ``https://user:key@host/mcp``, a
``?api_key=`` or a path of its own, as hosted servers hand them out — and the proxy named
its upstream by that URL whole: every served tool without a description of its own was
described to the agent as `` `fine` of http://alice:PASSW0RD-9x@127.0.0.1:…/mcp?api_key=…
`` (in ``tools/list``: the model, which a prompt injection steers, held the key), and each
verified call journaled ``upstream:<the URL>`` as its verification's source (in the
journal, its exports and the graph, which ``serve`` lets anyone on the machine read by
default). Now an upstream on HTTP is named by its origin alone, ``http://127.0.0.1:PORT``:
no user, password, path, query or fragment; the URL is used whole only to reach it.

A real ``cradle-kg mcp proxy --upstream URL`` on pipes before a real server on 127.0.0.1
(``http_upstream.py``, its honest tool ``fine``); the home's files are searched for the
secrets byte by byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_43_upstream_http import Proxy, hostile_upstream

PASSWORD, KEY, PATH = "PASSW0RD-9x", "SECRETKEY-77", "s-PATHKEY-55"
VERIFIED = """\
tools:
  fine:
    side_effect: reversible
    idempotency: keyed
    target: 'test:fine'
    verify: {tool: fine, arguments: {}}
"""


@pytest.fixture
def keyed_url(tmp_path: Path) -> Iterator[str]:
    for url in hostile_upstream(tmp_path):
        origin = url.removesuffix("/mcp").removeprefix("http://")
        yield f"http://alice:{PASSWORD}@{origin}/mcp?api_key={KEY}&p={PATH}#frag"


def _secrets_in(text: str) -> list[str]:
    return [s for s in (PASSWORD, KEY, PATH, "alice") if s in text]


def test_the_agent_is_not_shown_the_upstream_s_credentials(
        home: Path, tmp_path: Path, keyed_url: str) -> None:
    proxy = Proxy(home, tmp_path, keyed_url)
    try:
        proxy.request(2, "tools/list", {})
        listed = proxy.wait_for(lambda m: m.get("id") == 2)
        described = [t["description"] for t in listed["result"]["tools"]]
        # before: "`fine` of http://alice:PASSW0RD-9x@127.0.0.1:…/mcp?api_key=SECRETKEY-77…"
        assert not _secrets_in(str(listed)), described
        origin = keyed_url.split("@")[1].split("/")[0]
        assert f"`fine` of http://{origin}" in described, described
        proxy.fine(3)  # the URL, whole, still reaches the upstream
    finally:
        err = proxy.close(tmp_path)
    assert not _secrets_in(err), err


def test_the_journal_keeps_no_credential_of_the_upstream(
        home: Path, tmp_path: Path, keyed_url: str) -> None:
    proxy = Proxy(home, tmp_path, keyed_url, VERIFIED)
    try:
        proxy.fine(2)
    finally:
        proxy.close(tmp_path)
    leaked = [str(p.relative_to(home)) for p in home.rglob("*") if p.is_file()
              and any(s.encode() in p.read_bytes() for s in (PASSWORD, KEY, PATH))]
    # before: the journal (`upstream:http://alice:…` as the verification's source)
    assert leaked == []
