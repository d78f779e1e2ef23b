"""Connecting to a PostgreSQL journal, and the advisory-lock keys every worker agrees on."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from ..errors import JournalError

if TYPE_CHECKING:
    import psycopg

#: advisory-lock namespaces (the first int of the two-int form): "CRAD" + n
APPEND_LOCK, LEASE_LOCKS, NAMED_LOCKS, MIGRATE_LOCK = (0x43524144 + n for n in range(4))


#: the password of the userinfo — with or without a user name, up to the authority's last
#: ``@`` — and of a ``password=`` parameter
_USERINFO_PASSWORD = re.compile(r"(://[^:/@?#]*):([^/?#]*)@")
_PARAM_PASSWORD = re.compile(r"([?&]password=)([^&#]*)", re.IGNORECASE)


def redact(url: str) -> str:
    """The URL without its password (for messages)."""
    return _PARAM_PASSWORD.sub(r"\1***", _USERINFO_PASSWORD.sub(r"\1:***@", url))


def scrub(text: str, url: str) -> str:
    """``text`` (libpq's message about ``url``) without the URL's passwords: libpq quotes
    the part of the URL it cannot parse, a password included."""
    for m in (*_USERINFO_PASSWORD.finditer(url), *_PARAM_PASSWORD.finditer(url)):
        if m.group(2):
            text = text.replace(m.group(2), "***")
    return redact(text)


def int4(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def lease_key(worker_id: str) -> int:
    return int4(int(worker_id[2:10], 16))


#: the ``sslmode`` values under which libpq checks the server's certificate
_VERIFIED = frozenset({"verify-ca", "verify-full"})


def conninfo(url: str) -> str:
    """The connection string for ``url``: keepalives, a connect timeout, and — unless the
    URL (or ``PGSSLMODE``) verifies the server's certificate or the URL (or
    ``PGREQUIREAUTH``) says which authentication it takes — ``require_auth=!password``:
    libpq answers whatever a server asks, and whoever answers at the journal's address
    said "no TLS" and asked for the password in clear, which libpq then sent
    (``tests/security/test_349``). SCRAM, MD5, trust and peer are unchanged. A libpq
    older than 16 knows no ``require_auth`` (it would refuse to connect): it goes without,
    as before — the bundled one of ``psycopg[binary]`` is newer."""
    from psycopg import pq
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    given = conninfo_to_dict(url)
    sslmode = str(given.get("sslmode") or os.environ.get("PGSSLMODE") or "")
    chosen = given.get("require_auth") or os.environ.get("PGREQUIREAUTH")
    extra: dict[str, Any] = {} if sslmode in _VERIFIED or chosen \
        or pq.version() < 160000 else {"require_auth": "!password"}
    # a dead host's lease is dropped when its TCP connection is found dead (~25 s)
    return make_conninfo(url, connect_timeout=10, keepalives=1, keepalives_idle=10,
                         keepalives_interval=5, keepalives_count=3, **extra)


def connect(url: str, *, autocommit: bool = True) -> psycopg.Connection[tuple[Any, ...]]:
    try:
        import psycopg
    except ImportError as exc:
        raise JournalError("the PostgreSQL journal needs psycopg 3",
                           hint="pip install 'cradle-kg[postgresql]'") from exc
    try:
        conn = psycopg.connect(conninfo(url), autocommit=autocommit)
        # no server-side prepared statements: one that an aborted pipeline never created
        # would stay in psycopg's cache ("prepared statement ... does not exist")
        conn.prepare_threshold = None
        return conn
    except psycopg.Error as exc:
        raise JournalError(f"cannot connect to the journal `{redact(url)}`: "
                           f"{scrub(str(exc).strip(), url)}") from None


def keep_schema(conn: psycopg.Connection[tuple[Any, ...]], schema: str | None = None
                ) -> str | None:
    """Fix the session's ``search_path`` to ``schema`` (by default the one its URL's path
    resolves to now, ``current_schema()``): that schema — ``pg_catalog`` before it, as
    always — and ``pg_temp`` last. The schema it names (None: the path names none that
    exists; the path is left as it is).

    INVARIANT: a journal's session names the journal it opened for its whole life. The
    URL's path is resolved again at each statement otherwise: a schema created later
    earlier on it (the default path is ``"$user", public``) took a worker over — its
    appends, claims and guards went to another journal (``tests/security/test_419``)."""
    from psycopg import sql

    if schema is None:
        row = conn.execute("SELECT current_schema()").fetchone()
        schema = None if row is None or row[0] is None else str(row[0])
    if schema is not None:
        conn.execute(sql.SQL("SELECT set_config('search_path', {}, false)").format(
            sql.Literal(sql.SQL("{}, pg_temp").format(
                sql.Identifier(schema)).as_string(conn))))
    return schema


def schema_version(conn: psycopg.Connection[tuple[Any, ...]]) -> list[tuple[int, str]]:
    """The migrations recorded in the database (none when it was never migrated)."""
    if conn.execute("SELECT to_regclass('schema_migrations')").fetchone() == (None,):
        return []
    return [(int(v), str(n)) for v, n in
            conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")]


__all__ = ["APPEND_LOCK", "LEASE_LOCKS", "MIGRATE_LOCK", "NAMED_LOCKS", "connect", "conninfo",
           "int4", "keep_schema", "lease_key", "redact", "schema_version", "scrub"]
