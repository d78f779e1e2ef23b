"""A host name with a trailing dot is not this machine by its name alone.

Finding (twenty-seventh review, outbound connections): ``graph_config.loopback`` decides
"this machine" by the name alone, "no lookup, so no answer of a resolver": it is what lets
basic credentials or a bearer token go to a graph store over plain ``http://``
(``test_372``) and what keeps a request off the environment's proxy (``test_401``, for
the graph store, the model server and the MCP upstream). It dropped a trailing dot first,
so ``localhost.``, ``127.0.0.1.`` and ``127.8.9.10.`` counted as loopback — but a name
ending in a dot is not an address literal and is not read from ``/etc/hosts``: glibc's
``getaddrinfo`` asks DNS for it (on this machine ``localhost`` resolves from
``/etc/hosts`` and ``localhost.`` does not resolve at all). A resolver (or whoever
answers for it on the network) said where ``http://cradle:pw@localhost.:7878`` went: the
password in clear, and past the proxy the operator's environment names.

Now only ``localhost`` and address literals (127.0.0.0/8, ``::1``, an IPv4-mapped
loopback address) are loopback, as written; a name with a trailing dot is another host:
credentials over plain http to it are refused (``graph_credentials_in_clear``) and it
goes through the environment's proxy like any other.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cradle_kg.environment_proxies import environment_proxy
from cradle_kg.errors import GraphCredentialsInClearError
from cradle_kg.storage.graph_config import GraphEndpoints, resolve

SECRET = "Tr41lingD0t-612"
PROXY = "http://proxy.example:3128"


def _endpoints(base: str) -> GraphEndpoints:
    return GraphEndpoints(query=f"{base}/query", update=f"{base}/update",
                          store=f"{base}/store", user="cradle")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("CRADLE_GRAPH_URL", "CRADLE_GRAPH_ALLOW_PLAIN_HTTP_CREDENTIALS",
                 "CRADLE_GRAPH_USER", "CRADLE_GRAPH_TOKEN", "HTTP_PROXY", "HTTPS_PROXY",
                 "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("CRADLE_GRAPH_PASSWORD", SECRET)
    monkeypatch.setenv("HTTP_PROXY", PROXY)
    yield monkeypatch


@pytest.mark.parametrize("host", ["localhost.", "LOCALHOST.", "127.0.0.1.", "127.8.9.10."])
def test_a_trailing_dot_name_gets_no_credentials_in_clear(
        host: str, env: pytest.MonkeyPatch) -> None:
    with pytest.raises(GraphCredentialsInClearError) as refused:  # before: DID NOT RAISE
        resolve(_endpoints(f"http://{host}:7878"))
    assert SECRET not in refused.value.message


@pytest.mark.parametrize("host", ["localhost.", "127.0.0.1."])
def test_a_trailing_dot_name_goes_through_the_proxy(
        host: str, env: pytest.MonkeyPatch) -> None:
    assert environment_proxy(f"http://{host}:7878/query") == PROXY  # before: None


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST", "127.0.0.1", "[::1]",
                                  "[::ffff:127.0.0.1]"])
def test_this_machine_as_written_is_still_loopback(
        host: str, env: pytest.MonkeyPatch) -> None:
    assert resolve(_endpoints(f"http://{host}:7878")).basic == ("cradle", SECRET)
    assert environment_proxy(f"http://{host}:7878/query") is None
