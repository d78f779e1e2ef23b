"""A failed catch-up is told to the SPARQL client by its kind; its text goes to the log.

Finding (left by the twenty-fourth review's reviewers): before each query a worker of
``cradle-kg serve`` looks at the journal and, when it moved, asks the supervisor to catch
the private store up. When that failed, the client was answered 500 with the exception's
text: the supervisor's (``OSError: [Errno 28] No space left on device:
'/tmp/cradle-serve-…/generation-3'`` — the server's private folder holding a full copy of
the graph) or the worker's own read of the journal (a PostgreSQL error naming the database
host, its port and user). ``/healthz`` had been held to say only the kind of such an error
(tests/security/test_176); ``/sparql`` said all of it to any caller.

Now the answer says the catch-up failed and the error's kind (``OSError``,
``OperationalError``); its text goes to the server's log (stderr), as the compaction's.
The same for a query worker's unexpected failure (``the query worker failed: <kind>``).
"""

from __future__ import annotations

import errno
import multiprocessing as mp
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from cradle_kg.home import Home
from cradle_kg.server.dataset import PrivateStore
from cradle_kg.server.front import FrontConfig, QueryWorker, Start
from cradle_kg.server.supervisor import QueryFront
from cradle_kg.server.worker import Job, Limits
from tests.security.homes import opened_demo_home

WHERE = "/tmp/cradle-serve-k3j2x9/generation-3"
HOST = 'connection to server at "db.internal.example" (10.1.2.3), port 5432 failed'


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return opened_demo_home(tmp_path_factory, "catch-up-error", embedded=True)


class _FullDisk:
    """The private store whose catch-up fails as a full disk does."""

    def latest(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", WHERE)


class OperationalError(Exception):
    """What psycopg raises when the database cannot be reached."""


class _Unreachable:
    def watermark(self) -> object:
        raise OperationalError(HOST)

    def head_seq(self) -> int:
        raise OperationalError(HOST)


def _worker(home: Path, private: PrivateStore, conn: object) -> QueryWorker:
    config = FrontConfig(limits=Limits(), timeout=60.0, app_socket=str(home / "no-app"),
                         max_body_bytes=1 << 20, follows=True,
                         journal=str(Home(home).journal), threads=1)
    generation, seq = private.published()
    return QueryWorker(config, Start(0, str(generation), seq), conn,  # type: ignore[arg-type]
                       [0.0], [0], [1], sandboxed=False)


def _ask(worker: QueryWorker) -> tuple[int, str]:
    reply = worker.execute(Job(query="ASK { ?s ?p ?o }",
                               accept="application/sparql-results+json"), {}, [])
    return reply.status, reply.body.decode()


def test_the_supervisors_failure_is_told_by_its_kind(
        home: Path, private: PrivateStore, capsys: pytest.CaptureFixture[str]) -> None:
    ours, theirs = mp.Pipe()
    entry = SimpleNamespace(conn=theirs, ready=True, generation="")
    front = SimpleNamespace(source=_FullDisk(), _told=threading.Lock())
    served = threading.Thread(target=QueryFront._serve, args=(front, entry), daemon=True)
    served.start()
    try:
        status, body = _ask(_worker(home, private, ours))
    finally:
        ours.close()
        theirs.close()
        served.join(5)
    assert status == 500 and "could not catch up" in body and "OSError" in body, body
    # before: "... OSError: [Errno 28] No space left on device: '/tmp/cradle-serve-…'"
    assert WHERE not in body, body
    assert WHERE in capsys.readouterr().err  # the operator's log has it


def test_the_workers_own_journal_failure_is_told_by_its_kind(
        home: Path, private: PrivateStore, capsys: pytest.CaptureFixture[str]) -> None:
    worker = _worker(home, private, None)
    worker.journal = _Unreachable()  # type: ignore[assignment]
    status, body = _ask(worker)
    assert status == 500 and "OperationalError" in body, body
    # before: "... OperationalError: connection to server at "db.internal.example" ..."
    assert "db.internal.example" not in body, body
    assert "db.internal.example" in capsys.readouterr().err
