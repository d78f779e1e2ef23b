"""Graph engines for the tests: real SPARQL 1.1 servers, started once per session.

``virtuoso`` starts a throw-away Virtuoso Open Source
(:mod:`cradle_kg.storage.virtuoso_scratch`: a fresh database in a temp dir, SQL and HTTP
on free ports of 127.0.0.1, basic auth on ``/sparql-auth`` and ``/sparql-graph-crud-auth``)
the first time a test asks for it, and stops it when the session ends. Missing binaries
fail the test loudly, never skip it: ``./dev test`` installs Debian's
``virtuoso-opensource`` when run as root. The embedded default needs none of it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cradle_kg.storage.virtuoso_scratch import ScratchVirtuoso


@pytest.fixture(scope="session")
def virtuoso() -> Iterator[ScratchVirtuoso]:
    server = ScratchVirtuoso()  # raises VirtuosoUnavailable (with the install command)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fresh_virtuoso(virtuoso: ScratchVirtuoso) -> ScratchVirtuoso:
    """The session's server with no graph but Virtuoso's own."""
    virtuoso.clear()
    return virtuoso
