"""Attack review (many workers, an operator's tuning): a PostgreSQL journal whose sessions
commit asynchronously by default.

Finding: a write's intent is durable before its tool is called and its outcome before the
answer ("always flushed", *Durability of a read*): on PostgreSQL the journal relied on
the session's ``synchronous_commit``. A database, a role or the URL that sets it ``off``
(``ALTER DATABASE … SET synchronous_commit = off``, ``options=-csynchronous_commit=off``:
a common throughput tuning) made every commit of the journal asynchronous: the journal
read the setting, concluded no flush waits for the disk, and committed each durable
append without one — an acknowledged intent (its tool then called) or outcome could be
lost with the server's power, and a resubmitted key run again.

Now: a journal opened to write commits its durable appends with ``synchronous_commit`` at
least ``on`` in its session (a stronger setting — ``remote_apply`` — is kept); a read's
deferred commit is still ``SET LOCAL … OFF`` in its own transaction.
"""

from __future__ import annotations

import pytest

from cradle_kg.storage import open_journal
from tests.storage.test_pg_append import ev


def _with(url: str, setting: str) -> str:
    return f"{url}%20-csynchronous_commit%3D{setting}"


def _setting(journal: object) -> str:
    """The ``synchronous_commit`` of the session that commits the journal's appends."""
    rows = journal._query("SHOW synchronous_commit")  # type: ignore[attr-defined]
    return str(rows[0][0])


def test_a_session_that_commits_asynchronously_is_made_durable(pg_url: str) -> None:
    assert "options=" in pg_url  # the scratch URL's search_path: the setting joins it
    with open_journal(_with(pg_url, "off")) as j:
        assert _setting(j) == "on"
        j.append([ev(1, "action.intent", key="idem:a")])  # durable: committed, flushed
        j.append([ev(2)], flush=False)  # a deferred commit: its own SET LOCAL
        assert _setting(j) == "on"
        assert j.head()[0] == 2


@pytest.mark.parametrize("setting", ["local", "remote_write", "remote_apply"])
def test_a_setting_that_flushes_is_kept(pg_url: str, setting: str) -> None:
    with open_journal(_with(pg_url, setting)) as j:
        assert _setting(j) == setting
        j.append([ev(1)])


def test_a_reader_is_left_as_it_is(pg_url: str) -> None:
    with open_journal(_with(pg_url, "off"), read_only=True) as j:
        assert _setting(j) == "off"
