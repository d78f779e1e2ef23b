"""The process's shared TLS context cannot be widened by one of its users.

Finding (twelfth attack review, on recent code): ``cradle_kg.tls.tls_context()`` — one
:class:`ssl.SSLContext` per process, handed to the remote graph store's client, the model
client, the MCP proxy's HTTP upstream and, through the pack SDK, to every pack
(``sdk.tls_context``) — was an ordinary context anyone holding it could change. A pack that
reaches a service of its own behind a private certificate does what ``ssl`` invites:
``tls_context().load_verify_locations(cafile=its_ca)`` (or ``check_hostname = False``).
Before the shared context that changed the pack's own client; now it changed the
runtime's: every client of the process — the remote SPARQL store the journal is projected
to, the model server, an MCP upstream — trusted the pack's certificate (here, a
self-signed one for 127.0.0.1 that the model client then talked to), or stopped checking
host names, and nothing said so.

Now the shared context is sealed once made: loading certificates or keys into it, or
setting any of its attributes, raises ``TypeError`` naming what to do instead (make a
context of your own: ``ssl.create_default_context(cafile=…)``); it still verifies
certificates and host names, and httpx still sets its ALPN protocols per connection.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cradle_kg import tls
from cradle_kg.packs.sdk import tls_context
from cradle_kg.workflow.model import OpenAICompatibleClient
from tests.tls_server import self_signed_server


@pytest.fixture
def fresh_context() -> Iterator[None]:
    """A context of this test's own, and none of its changes left to the next tests."""
    tls.tls_context.cache_clear()
    yield
    tls.tls_context.cache_clear()


@pytest.fixture
def self_signed() -> Iterator[tuple[str, Path]]:
    """A real TLS server on 127.0.0.1 with a self-signed certificate: (url, certificate)."""
    with self_signed_server() as server:
        yield server


@pytest.mark.usefixtures("fresh_context")
def test_a_pack_cannot_widen_what_the_runtime_trusts(self_signed: tuple[str, Path]) -> None:
    url, cert = self_signed
    shared = tls_context()  # what a pack gets from the SDK
    with pytest.raises(TypeError, match="shared"):  # before: loaded, for every client
        shared.load_verify_locations(cafile=str(cert))
    for name, value in (("check_hostname", False), ("verify_mode", ssl.CERT_NONE)):
        with pytest.raises(TypeError, match="shared"):
            setattr(shared, name, value)
    with pytest.raises(TypeError, match="shared"):
        shared.load_default_certs()
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname

    # the runtime's own client (the model server's) still refuses the pack's certificate
    model = OpenAICompatibleClient(url + "/v1")
    try:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            model._http.get("/models")  # before: answered (501), the certificate trusted
    finally:
        model.close()
    # a context of the pack's own trusts it, as before the shared context
    own = ssl.create_default_context(cafile=str(cert))
    with httpx.Client(verify=own, trust_env=False, timeout=5) as client:
        assert client.get(url + "/").status_code == 501
