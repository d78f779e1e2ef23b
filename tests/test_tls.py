"""The process's one client TLS context (``cradle_kg.tls``): made once, and it verifies."""

from __future__ import annotations

import ssl

import httpx
import pytest

from cradle_kg.packs.sdk import tls_context
from tests.tls_server import self_signed_server


def test_one_context_that_verifies_certificates_and_host_names() -> None:
    ctx = tls_context()
    assert tls_context() is ctx  # made once per process: no CA bundle loaded per client
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] > 0  # it trusts a bundle


def test_a_client_given_it_refuses_a_self_signed_server() -> None:
    """Sharing the context must not weaken it: a real TLS server on 127.0.0.1 with a
    self-signed certificate is refused at the handshake, as by a client's own context."""
    with (self_signed_server() as (url, _),
          httpx.Client(verify=tls_context(), trust_env=False, timeout=5) as client,
          pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED")):
        client.get(url + "/")
