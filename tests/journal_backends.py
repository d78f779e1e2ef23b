"""Journal backends for the tests: a real PostgreSQL server, started once per session.

``postgres`` (owned by :mod:`tests.suite_backend`, so that the whole-suite run and these
fixtures share one server) starts a throw-away server (:mod:`cradle_kg.storage.pg_scratch`:
``initdb`` in a temp dir, a free port on 127.0.0.1) the first time a test asks for it, and
stops it when the session ends. Missing PostgreSQL binaries fail the test loudly, never
skip it: ``./dev test`` installs Debian's ``postgresql`` when run as root.

``journal_backend`` parametrises a test over both journals: on ``postgresql`` it points
``CRADLE_JOURNAL_URL`` at a fresh database (a fresh migrated schema) for that test,
so every runtime, CLI command and helper the test opens uses it; on ``sqlite`` it clears the
variable (the embedded ``<home>/journal.sqlite``). Modules opt in with
``pytestmark = pytest.mark.usefixtures("journal_backend")``.
"""

from __future__ import annotations

import pytest

from cradle_kg.storage import JOURNAL_URL_ENV
from cradle_kg.storage.pg_scratch import ScratchPostgres

BACKENDS = ("sqlite", "postgresql")


@pytest.fixture
def pg_url(postgres: ScratchPostgres) -> str:
    """A fresh, migrated PostgreSQL journal for one test (a schema of its own, through the
    URL's ``search_path``; the server and all its schemas go at the end of the session)."""
    return postgres.journal_schema()


@pytest.fixture(params=BACKENDS)
def journal_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "postgresql":
        monkeypatch.setenv(JOURNAL_URL_ENV, request.getfixturevalue("pg_url"))
    else:
        monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    return str(request.param)
