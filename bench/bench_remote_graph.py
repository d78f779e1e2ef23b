"""The graph on a remote SPARQL 1.1 store vs the embedded one: ``validate --all`` and
``why-allowed``, as a person runs them, against ``oxigraph serve`` and Virtuoso Open
Source, each as a ratio to the embedded on-disk store measured in the same process.

One runtime-filled home (:mod:`synthetic`, ``--events`` events, no graph yet) is copied
once per store; each copy's graph is built by ``cradle-kg graph rebuild`` into its store
(timed); then, rounds interleaved over the stores (a burst of load on this shared machine
hits each alike):

* ``cradle-kg validate --all`` — the whole store against the integrity rules and
  structural shapes (exit 0: conforms);
* ``cradle-kg query why-allowed --param action=…`` — for actions sampled from the journal,
  one command each.

The commands run in this process (the CLI's ``main``, as ``tests/inprocess.py`` does), so
start-up is not counted and is the same for every store. Both servers are throw-away ones
on 127.0.0.1 (:mod:`cradle_kg.storage.sparql_scratch`, :mod:`cradle_kg.storage.
virtuoso_scratch`). Run: ``.venv/bin/python bench/bench_remote_graph.py [--events 2000]
[--rounds 3] [--asks 10]``. Prints figures; asserts nothing but the answers' exit codes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner
from synthetic import build_events_home

from cradle_kg.storage import SqliteJournal
from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from cradle_kg.storage.sparql_scratch import ScratchOxigraph
from cradle_kg.storage.virtuoso_scratch import ScratchVirtuoso

STORES = ("embedded", "oxigraph-serve", "virtuoso")
AUTH = ("CRADLE_GRAPH_USER", "CRADLE_GRAPH_PASSWORD")


ANSWERS: dict[tuple[str, str], str] = {}  # (store, action) -> why-allowed's JSON


def cli(*args: str, keep: tuple[str, str] | None = None) -> int:
    """``cradle-kg ARGS`` in this process; its exit code (``keep``: remember stdout)."""
    from cradle_kg.cli import main

    runner = CliRunner()
    argv, code = sys.argv, 0
    with runner.isolation(env={"COLUMNS": "200"}) as (out, _err, _):
        sys.argv = ["cradle-kg", *args]
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = argv
            sys.stdout.flush()
        if keep is not None:
            ANSWERS[keep] = out.getvalue().decode("utf-8", errors="replace")
    return code


def point_at(store: str, servers: dict[str, ScratchOxigraph | ScratchVirtuoso]) -> None:
    for name in (GRAPH_URL_ENV, *AUTH):
        os.environ.pop(name, None)
    server = servers.get(store)
    if isinstance(server, ScratchOxigraph):
        os.environ[GRAPH_URL_ENV] = server.url
    elif isinstance(server, ScratchVirtuoso):
        e = server.endpoints
        os.environ[GRAPH_URL_ENV] = f"query={e.query} update={e.update} store={e.graph_store}"
        os.environ["CRADLE_GRAPH_USER"], os.environ["CRADLE_GRAPH_PASSWORD"] = (e.user,
                                                                                 e.password)


def timed(fn: Callable[[], int], want: tuple[int, ...] = (0,)) -> float:
    t0 = time.perf_counter()
    code = fn()
    took = time.perf_counter() - t0
    if code not in want:
        raise SystemExit(f"exit code {code}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--asks", type=int, default=10, help="why-allowed calls per round")
    args = parser.parse_args()
    source = build_events_home(args.events)
    with SqliteJournal(source / "journal.sqlite") as journal:
        actions = sorted({e.subject for e in journal.events_of_kind("action.intent")})
        events = journal.head()[0]
    sample = random.Random(7).sample(actions, min(args.asks, len(actions)))
    servers: dict[str, ScratchOxigraph | ScratchVirtuoso] = {}
    tmp = Path(tempfile.mkdtemp(prefix="cradle-bench-remote-"))
    figures: dict[str, dict[str, list[float]]] = {s: {} for s in STORES}
    try:
        servers["oxigraph-serve"] = ScratchOxigraph()
        servers["virtuoso"] = ScratchVirtuoso()
        homes = {}
        for store in STORES:
            homes[store] = tmp / store
            shutil.copytree(source, homes[store])
            point_at(store, servers)
            print(f"building the graph in {store} ...", file=sys.stderr)
            figures[store]["graph rebuild s"] = [timed(
                lambda h=homes[store]: cli("graph", "rebuild", "--home", str(h)))]
        for round_ in range(args.rounds):
            for store in STORES:
                print(f"round {round_ + 1}: {store}", file=sys.stderr)
                point_at(store, servers)
                home = str(homes[store])
                figures[store].setdefault("validate --all s", []).append(timed(
                    lambda h=home: cli("validate", "--all", "--home", h)))
                asks = [timed(lambda h=home, a=a, s=store: cli(
                    "query", "why-allowed", "--param", f"action={a}", "--home", h,
                    "--format", "json", keep=(s, a))) for a in sample]
                figures[store].setdefault("why-allowed ms (median)", []).append(
                    statistics.median(asks) * 1000)
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        for name in (GRAPH_URL_ENV, *AUTH):
            os.environ.pop(name, None)
    answered = {a: [json.loads(ANSWERS[(s, a)]) for s in STORES] for a in sample}
    rows = sum(len(v[0]) for v in answered.values())
    alike = sum(len(v[0]) == len(v[1]) == len(v[2]) for v in answered.values())
    print(f"why-allowed: {rows} rows for {len(sample)} actions on the embedded store; "
          f"the same number of rows on every store for {alike} of {len(sample)}")
    print(f"{events:,} events, {len(sample)} actions asked per round, {args.rounds} rounds; "
          "min / median over rounds; ratio = min / the embedded store's min")
    print(f"{'measure':26}" + "".join(f"{s:>28}" for s in STORES))
    for name in figures["embedded"]:
        base = min(figures["embedded"][name])
        cells = []
        for store in STORES:
            values = figures[store][name]
            cells.append(f"{min(values):.2f}/{statistics.median(values):.2f} "
                         f"{min(values) / base:6.2f}x")
        print(f"{name:26}" + "".join(f"{c:>28}" for c in cells))


if __name__ == "__main__":
    main()
