"""A query that grows a worker's memory past ``--max-worker-memory`` is stopped: a 503.

Finding (twenty-fourth review): the endpoint's caps bound a query's text (size, nesting,
patterns, operators), its time (``--timeout``) and the bytes of its *serialized* result
(``--max-result-bytes``), but nothing bounded the memory the engine uses while it
evaluates. Strings are built in memory whole: a 2.7 KB query of 25 ``BIND``s, each
``CONCAT(?v, ?v)`` of the one before, asked only for the ``STRLEN`` of the last (one
number: far under the result cap) and was answered 200 after 7.6 s on an open ``/sparql``,
its worker grown from 46 MB to 1.66 GB resident; ``REPLACE(?a, "x", ?a)`` squares a
string's length in one step (128 characters twice: 236 MB in 0.8 s), a third step asks
for more memory than the machine has. Each worker runs four queries at once, and the
timeout bounds only how long each may grow (10 s: several GB each): a handful of
requests from anyone who reaches the open endpoint took the machine's memory.

Now each worker's watchdog reads its own resident memory (not mapped files) with its
deadlines (every 50 ms while a query runs): past ``--max-worker-memory`` (2 GiB by
default) the queries it runs are answered 503 naming the cap and the worker is replaced,
as after a runaway query; the server goes on answering.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import oneshot

from ..server.conftest import Server, start_server, stop_server
from .caps_server import ask, replaced
from .homes import opened_demo_home

#: the test server's cap: a few times a worker's own size here (45-70 MB)
CAP = 250_000_000


def doubling(steps: int) -> str:
    """A query whose string doubles ``steps`` times (16 bytes to 16 * 2**steps) and whose
    answer is one number."""
    binds = ['BIND("xxxxxxxxxxxxxxxx" AS ?v0)'] + [
        f"BIND(CONCAT(?v{i}, ?v{i}) AS ?v{i + 1})" for i in range(steps)]
    return f"SELECT (STRLEN(?v{steps}) AS ?n) WHERE {{ {' '.join(binds)} }}"


def squaring() -> str:
    """A query whose string's length is squared twice (128 characters to 128**4: 256 MiB)."""
    return ('SELECT (STRLEN(?c) AS ?n) WHERE { BIND("' + "x" * 128 + '" AS ?a) '
            'BIND(REPLACE(?a, "x", ?a) AS ?b) BIND(REPLACE(?b, "x", ?b) AS ?c) }')


#: each answered 200 before, in 0.8 to 2 s, its worker grown past 500 MB
GROWING = {"doubled by CONCAT": doubling(24), "squared by REPLACE": squaring()}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = opened_demo_home(tmp_path_factory, "t448")
    srv = start_server(["--home", str(home), "--max-worker-memory", str(CAP)],
                       tmp_path_factory.mktemp("l448") / "s.log", home)
    yield srv
    stop_server(srv)


@pytest.mark.parametrize("name", sorted(GROWING))
def test_a_query_past_the_memory_cap_is_stopped(server: Server, name: str) -> None:
    before = replaced(server)
    status, text = ask(server, GROWING[name])
    assert status == 503, (status, text[:300])
    assert "memory" in text and str(CAP) in text, text[:300]
    assert replaced(server) == before + 1
    # the server goes on answering, on a fresh worker
    status, text = ask(server, "ASK {}")
    assert (status, '"boolean":true' in text.replace(" ", "")) == (200, True), text[:300]


def test_a_query_within_the_cap_is_answered(server: Server) -> None:
    before = replaced(server)
    status, text = ask(server, doubling(16))  # 1 MiB
    assert status == 200, (status, text[:300])
    assert str(16 * 2**16) in text
    assert replaced(server) == before
    r = oneshot.get(server.url + "/queries/runs", headers={"accept": "application/json"})
    assert r.status_code == 200, r.text[:300]
