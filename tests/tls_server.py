"""A real TLS server on 127.0.0.1 with a self-signed certificate.

The certificate and its key are files of the suite (``tests/tls/``: P-256, for
``IP:127.0.0.1``, valid until 2126, made once with ``openssl req -x509``), so the tests need
no openssl on the machine and never skip."""

from __future__ import annotations

import http.server
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: the server's key and self-signed certificate
KEY, CERT = (Path(__file__).parent / "tls" / name for name in ("key.pem", "cert.pem"))


@contextmanager
def self_signed_server() -> Iterator[tuple[str, Path]]:
    """(its https URL, its certificate)."""
    key, cert = KEY, CERT
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    side.load_cert_chain(cert, key)
    server.socket = side.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", cert
    finally:
        server.shutdown()
        server.server_close()
