"""The time of a journal shared by many hosts: its server's clock, read once and carried on.

A limit's window, an approval's expiry, a quota's hour are read from the events' dates
(``at``), and each event is dated by the clock of the runtime that wrote it. On one host
every process reads the same kernel clock; a PostgreSQL journal is written by workers on
many hosts, and a host whose clock lagged or led the others by more than a window put its
calls where the others' windows did not look — the agent sending its calls to both made
the limit's calls once on each (``tests/security/test_508``).

So a runtime on such a journal, its clock not given by its host's code, dates its events by
the journal server's clock (:class:`ServerClock`): measured when it opens, half the round
trip added, then carried on by this process's monotonic clock (a step of the host's clock
does not move it) and measured again every :attr:`ServerClock.REFRESH` seconds (a slow
drift is corrected). The events still carry their dates, so what is derived from them is
a function of the events.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from ..errors import JournalError
from .journal import Journal


class ServerClock:
    """``now`` on the journal server's clock (see the module docstring)."""

    #: seconds between two measurements of the server's clock
    REFRESH = 300.0

    def __init__(self, journal: Journal, server: datetime, at: float) -> None:
        self._journal = journal
        self._lock = threading.Lock()
        #: the server's time and this process's monotonic clock at the last measurement
        self._base = (server, at)

    @classmethod
    def measured(cls, journal: Journal) -> ServerClock | None:
        """The clock of ``journal``'s server, or None when it has none (one host's)."""
        found = _measure(journal)
        return None if found is None else cls(journal, *found)

    def _measure(self) -> None:
        found = _measure(self._journal)
        if found is not None:
            self._base = found

    def __call__(self) -> datetime:
        server, at = self._base
        now = time.monotonic()
        if now - at >= self.REFRESH and self._lock.acquire(blocking=False):
            try:
                self._measure()
            except JournalError:
                pass  # the server out of reach: the last measurement carries on
            finally:
                self._lock.release()
            server, at = self._base
            now = time.monotonic()
        return server + timedelta(seconds=now - at)


def _measure(journal: Journal) -> tuple[datetime, float] | None:
    """The server's time and this process's monotonic clock half way through the round
    trip that read it (None: the journal has no server)."""
    before = time.monotonic()
    server = journal.server_time()
    return None if server is None else (server, (before + time.monotonic()) / 2)


def journal_clock(journal: Journal, local: Callable[[], datetime]) -> Callable[[], datetime]:
    """The clock a runtime on ``journal`` dates its events by, when its host's code gives
    none: the server's (:class:`ServerClock`), else ``local`` (this host's)."""
    return ServerClock.measured(journal) or local


__all__ = ["ServerClock", "journal_clock"]
