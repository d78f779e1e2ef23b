"""A runtime opened to read refuses every write, before anything of it is written.

The reading commands' runtime (``test_309`` … ``test_311``) is the library's
:class:`~cradle_kg.Runtime` with ``read_only=True``. What a host's code may still call on
it — a submission, an upload, a run's input, a claim, a recovery pass, an approval
decided — must not write around the journal it cannot append to: a blob stored before
the append refused, a tool called before its intent. Each is refused with a
:class:`~cradle_kg.errors.JournalError` and the home is as it was: its journal's head, its
files. It opens no graph store (``graph()`` is ``None``) and holds no lease; its
journal's connection itself refuses a write. On both journals.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import JournalError
from cradle_kg.records import ApprovalStatus
from cradle_kg.storage import NewEvent, open_home_journal
from tests.security.handed import home_files
from tests.security.homes import credit

pytestmark = pytest.mark.usefixtures("journal_backend")


def _head(home: Path) -> tuple[int, str]:
    with open_home_journal(home, must_exist=True) as journal:
        return journal.head()


def test_every_write_of_a_read_only_runtime_is_refused(home: Path) -> None:
    with Runtime(home) as rt:
        assert rt.submit(credit("p-1")).status.value == "executed"
    head, files = _head(home), home_files(home)
    with Runtime(home, read_only=True) as ro:
        assert ro.recovery is None and ro.graph() is None and not ro.lease.held()
        writes: list[Callable[[], object]] = [
            lambda: ro.submit(credit("p-2")),
            lambda: ro.add_evidence(b"an invoice", kind="invoice", collector="user:bob"),
            lambda: ro.record_input("run:task-p-3", "credit acct-1", author="user:bob"),
            lambda: ro.claim_run(f"run:{AGENT}/s", AGENT),
            lambda: ro.decide_approval("apr:none", approver_id="user:bob", token="t",
                                       status=ApprovalStatus.APPROVED),
            ro.recover,
        ]
        for write in writes:
            with pytest.raises(JournalError, match=r"the home .* is open read only"):
                write()
        # what the workflow engine and the autonomy book append through: the journal refuses
        note = NewEvent(run_id="run:x", kind="note", subject="x", actor="user:bob",
                        at=ro.clock(), payload={})
        with pytest.raises(JournalError, match=r"the journal .* is open read only"):
            ro.context.append([note])
        # below the runtime's own refusals, the journal's connection writes nothing either
        # (SQLite `query_only`; a PostgreSQL session whose transactions are read only)
        assert ro.journal.stored_digest_key() is None
        with pytest.raises(JournalError, match="cannot write the digest key"):
            ro.journal.digest_key()
        assert ro.journal.head() == head
    assert _head(home) == head
    assert home_files(home) == files
