"""``cradle-kg graph follow``: the one projector (:mod:`cradle_kg.graph.follow`)."""

from __future__ import annotations

import json
import signal
import sys
import threading
from enum import StrEnum
from typing import Annotated

import typer

from ..errors import CradleError
from ..graph.follow import FollowStatus, follow, install_retrying
from ..home import resolve_home
from ..storage.graph_opening import open_graph_store
from .common import HomeOpt, clean_text, console, fail
from .core import open_journal


class FollowFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


def graph_follow(
    home: HomeOpt = None,
    interval: Annotated[float, typer.Option(
        "--interval", min=0.01,
        help="Seconds between polls of the journal when no append wakes the follower "
             "first (PostgreSQL: each append's NOTIFY wakes it at once; SQLite: its "
             "change counter is read every 20 ms).")] = 0.5,
    batch: Annotated[int, typer.Option(
        "--batch", min=1, help="Events per update (one transaction each).")] = 5_000,
    once: Annotated[bool, typer.Option(
        "--once", help="Catch up to the head, then exit.")] = False,
    fmt: Annotated[FollowFormat, typer.Option("--format")] = FollowFormat.TEXT,
) -> None:
    """Keep the graph store (embedded or remote) in step with the journal: one projector.

    Waits for the journal to change (woken by an append, or polling every --interval)
    and projects new events in batches, each batch with its watermark in one update;
    prints progress and lag; a restart resumes from the store's watermark (no gap, no
    duplicate). SIGTERM or Ctrl-C: the batch in flight finishes, then it exits 0."""
    from ..graph.knowledge import install
    from ..packs.hooks import home_knowledge, home_projectors

    root = resolve_home(home)
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    def report(status: FollowStatus) -> None:
        if fmt is FollowFormat.JSON:
            sys.stdout.write(json.dumps(status.to_dict()) + "\n")
        elif status.error:
            # the error quotes the store's answer: cleaned like every printed value
            sys.stdout.write(f"not projected (retrying): {clean_text(status.error)}\n")
        else:
            sys.stdout.write(f"projected {status.projected}/{status.head} (+{status.added} "
                             f"in {status.seconds:.3f} s), lag {status.lag} events, "
                             f"{status.lag_seconds:.3f} s\n")
        sys.stdout.flush()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    with open_journal(home) as journal:
        try:
            store = open_graph_store(root)
        except CradleError as exc:
            fail(exc)
        total = 0
        try:
            # a store that cannot be reached at start is retried as in a round (it was
            # exit 2 here for a home whose packs have knowledge graphs to install)
            if install_retrying(journal, lambda: install(store, home_knowledge(root)),
                                stop=stop, report=report, interval=interval, once=once):
                if fmt is FollowFormat.TEXT:
                    console.print(f"following the journal into {store.describe()}",
                                  highlight=False)
                total = follow(store, journal, stop=stop, report=report,
                               projectors=home_projectors(root), interval=interval,
                               batch=batch, once=once)
        except CradleError as exc:
            fail(exc)
        finally:
            store.close()
    if fmt is FollowFormat.TEXT:
        console.print(f"stopped: {total} events projected", highlight=False)
