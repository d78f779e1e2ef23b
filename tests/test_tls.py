"""The process's one client TLS context (``cradle_kg.tls``): made once, and it verifies."""

from __future__ import annotations

import http.server
import shutil
import ssl
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from cradle_kg.packs.sdk import tls_context


def test_one_context_that_verifies_certificates_and_host_names() -> None:
    ctx = tls_context()
    assert tls_context() is ctx  # made once per process: no CA bundle loaded per client
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] > 0  # it trusts a bundle


def test_a_client_given_it_refuses_a_self_signed_server(tmp_path: Path) -> None:
    """Sharing the context must not weaken it: a real TLS server on 127.0.0.1 with a
    self-signed certificate is refused at the handshake, as by a client's own context."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    side.load_cert_chain(cert, key)
    server.socket = side.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"https://127.0.0.1:{server.server_address[1]}/"
        with (httpx.Client(verify=tls_context(), trust_env=False, timeout=5) as client,
              pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED")):
            client.get(url)
    finally:
        server.shutdown()
        server.server_close()
