"""The PostgreSQL journal's password is never sent in clear to a server it cannot verify.

Finding: a journal URL names a server and, unless it says otherwise, libpq connects with
``sslmode=prefer`` and answers whatever authentication the server asks for. A man in the
middle on the path to the database (or whoever answers at its address) says "no TLS"
to the SSL request and then asks for a *cleartext* password (``AuthenticationCleartext
Password``): ``db status``, ``db migrate``, ``journal copy``, every worker, runtime and
``serve`` sent the journal's password as it is — from the URL, ``$PGPASSWORD`` or
``~/.pgpass`` — in the first packet. SCRAM, which a real PostgreSQL asks for, never
sends it; a downgrade to cleartext is only an attacker's (or a misconfigured pooler's).

Now unless the URL verifies the server (``sslmode=verify-ca`` / ``verify-full``, where a
cleartext password goes only to the server the certificate names: cloud IAM tokens) or
sets ``require_auth`` itself, the connection is made with ``require_auth=!password``
(libpq 16+): a server that asks for the password in clear is refused before a byte of it
is sent — one ``error: cannot connect to the journal`` line, the password not in it. SCRAM,
MD5, trust and peer authentication are unchanged (the suite's PostgreSQL uses trust).

A real ``cradle-kg db status`` process against a hand-written server on 127.0.0.1 speaking
the start of PostgreSQL's protocol; PGSSLMODE and PGREQUIREAUTH unset.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from cradle_kg.storage.pg_connect import conninfo

from .homes import without_journal_url

SECRET = "Pg-S3cret-77"
SSL_REQUEST, GSS_REQUEST = 80877103, 80877104


class ClearTextServer:
    """Says no to TLS and GSS, then asks for the password in clear; keeps what it got."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = int(self.sock.getsockname()[1])
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                with contextlib.suppress(OSError, struct.error):
                    self._one(conn)

    @staticmethod
    def _read(conn: socket.socket, size: int) -> bytes:
        data = b""
        while len(data) < size:
            more = conn.recv(size - len(data))
            if not more:
                raise OSError("closed")
            data += more
        return data

    def _one(self, conn: socket.socket) -> None:
        while True:  # SSLRequest / GSSENCRequest answered "N", then the startup packet
            (length,) = struct.unpack("!i", self._read(conn, 4))
            body = self._read(conn, length - 4)
            if length == 8 and struct.unpack("!i", body)[0] in (SSL_REQUEST, GSS_REQUEST):
                conn.sendall(b"N")
                continue
            break
        conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
        kind = self._read(conn, 1)
        (length,) = struct.unpack("!i", self._read(conn, 4))
        self.received.append(kind + self._read(conn, length - 4))
        error = b"SFATAL\x00C28P01\x00Mpassword authentication failed\x00\x00"
        conn.sendall(b"E" + struct.pack("!i", len(error) + 4) + error)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def server() -> Iterator[ClearTextServer]:
    found = ClearTextServer()
    try:
        yield found
    finally:
        found.close()


def _env() -> dict[str, str]:
    return {k: v for k, v in without_journal_url().items()
            if k not in ("PGSSLMODE", "PGREQUIREAUTH", "PGPASSWORD")}


def test_a_cleartext_password_request_is_refused(server: ClearTextServer) -> None:
    for url in (f"postgresql://cradle:{SECRET}@127.0.0.1:{server.port}/journal",
                f"postgresql://cradle:{SECRET}@127.0.0.1:{server.port}/journal?sslmode=require"):
        done = subprocess.run([sys.executable, "-m", "cradle_kg", "db", "status", "--journal",
                               url], capture_output=True, text=True, timeout=120, env=_env())
        assert done.returncode == 2, done
        assert done.stderr.startswith("error: cannot connect to the journal"), done.stderr
        assert SECRET not in done.stdout + done.stderr
    sent = b"".join(server.received)
    assert SECRET.encode() not in sent, sent  # was: b"pPg-S3cret-77\x00"


def test_what_the_url_or_the_environment_says_is_kept(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    for variable in ("PGSSLMODE", "PGREQUIREAUTH"):
        monkeypatch.delenv(variable, raising=False)
    assert "!password" in conninfo("postgresql://h/db")
    for kept in ("postgresql://h/db?sslmode=verify-full",
                 "postgresql://h/db?sslmode=verify-ca",
                 "postgresql://h/db?require_auth=password"):
        assert "!password" not in conninfo(kept), kept
    monkeypatch.setenv("PGSSLMODE", "verify-full")
    assert "!password" not in conninfo("postgresql://h/db")
    monkeypatch.setenv("PGSSLMODE", "prefer")
    monkeypatch.setenv("PGREQUIREAUTH", "password")
    assert "!password" not in conninfo("postgresql://h/db")
