"""A query runs on the generation its job names, whatever the worker's other threads open.

Finding (tenth attack review, part two): a query worker of ``cradle-kg serve`` runs up to
four queries at once, each on a thread of its own, over one shared ``OpenGraph``. Each job
names the generation its freshness look chose (the newest when the query arrived);
``run_job`` switched the shared graph to it (``graph.at``) and then read ``graph.store``
— two steps. A query that arrived earlier, its job naming the older generation, switched
the shared graph back between them: the newer query ran on the older store, and was
answered 200 **without the events journaled before it arrived** (the freshness promise);
and since ``at`` wrote the store and its name as two attributes, two threads opening at
once could leave the graph named after one generation and holding the other's store, so
every later query of that worker was answered from the older one until the next event.

Now a job's query runs on the store ``at`` opened or holds for that very generation, and
the graph's generation and store are set together, in one assignment (the second race is
closed by that construction; its interleaving, between two bytecodes, is not reproduced
here). The pause between the two steps is
placed here by the job's own dataset (a tuple whose iteration waits), where a thread can
be descheduled in the real server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from cradle_kg.server.worker import Job, Limits, OpenGraph, run_job

GRAPH = "urn:g"
NEW = ox.Quad(ox.NamedNode("urn:decision:new"), ox.NamedNode("urn:p"), ox.Literal("x"),
              ox.NamedNode(GRAPH))
OLD = ox.Quad(ox.NamedNode("urn:decision:old"), ox.NamedNode("urn:p"), ox.Literal("x"),
              ox.NamedNode(GRAPH))
ASK_NEW = "ASK { <urn:decision:new> <urn:p> ?o }"


class _Paused(tuple[str, ...]):
    """A dataset whose reading waits until told: the thread is descheduled there."""

    reached: threading.Event
    go_on: threading.Event

    def __iter__(self) -> Iterator[str]:
        self.reached.set()
        assert self.go_on.wait(10)
        return super().__iter__()


def _generations(tmp_path: Path) -> tuple[str, str]:
    store = ox.Store(str(tmp_path / "private"))
    store.add(OLD)
    store.backup(str(tmp_path / "generation-1"))
    store.add(NEW)  # an event journaled: the next generation holds it
    store.backup(str(tmp_path / "generation-2"))
    del store
    return str(tmp_path / "generation-1"), str(tmp_path / "generation-2")


def _answer(reply: Any) -> bool:
    assert reply.status == 200, reply.body
    return bool(json.loads(reply.body)["boolean"])


def test_a_query_runs_on_its_own_generation(tmp_path: Path) -> None:
    old, new = _generations(tmp_path)
    graph = OpenGraph(Path(old))
    paused = _Paused((GRAPH,))
    paused.reached, paused.go_on = threading.Event(), threading.Event()
    answers: list[bool] = []

    def newer() -> None:  # arrived after the event: its job names the new generation
        answers.append(_answer(run_job(graph, Job(
            query=ASK_NEW, accept="application/sparql-results+json",
            default_graphs=paused, generation=new), Limits())))

    thread = threading.Thread(target=newer)
    thread.start()
    assert paused.reached.wait(10)
    # a query that arrived before the event, its job naming the older generation, runs
    # on another thread of the worker meanwhile
    assert _answer(run_job(graph, Job(query=ASK_NEW, accept="application/sparql-results+json",
                                      default_graphs=(GRAPH,), generation=old),
                           Limits())) is False
    paused.go_on.set()
    thread.join(10)
    assert answers == [True], "the newer query was answered from the older generation"
