"""The "why was X allowed" query on a store of >= 1,000,000 triples made by the runtime.

* **library path** — what ``cradle-kg query why-allowed --param action=...`` does once the
  store is open: bind the parameter as an RDF term, run the query on the on-disk
  Oxigraph store, read every row. p50 / p90 / p99 over a sample of executed actions.
* **endpoint** — a real ``cradle-kg serve`` process on 127.0.0.1 (worker processes that
  load a snapshot of the same store); a concurrent client (threads, keep-alive) asks the
  same question through ``/queries/why-allowed`` and through ``/sparql``; queries per
  second over a fixed duration.

Targets (issue "Provenance queries ..."): p50 <= 10 ms; >= 300 queries/s.
The home is built by ``synthetic.build_home`` (real ``Runtime.submit`` calls, graph sync
off, one ``OxigraphStore.rebuild``) and cached under ``bench/out/``.

Run: ``.venv/bin/python bench/bench_sparql.py [--triples N] [--seconds S] [--clients C]
[--workers W]``. Prints figures (and writes them to ``bench/out/bench_sparql.txt``);
asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import OUT, build_home

from cradle_kg.graph.queries import QueryCatalog, bind, execute
from cradle_kg.storage.oxigraph import OxigraphStore

C = "https://w3id.org/cradle#"


def sample_actions(store: OxigraphStore, n: int) -> list[str]:
    found = [row["a"].value for row in store.query(
        f"SELECT ?a WHERE {{ ?a <{C}authorizedBy> ?d }} LIMIT 20000")]
    random.Random(7).shuffle(found)
    return found[:n]


def library_path(store: OxigraphStore, actions: list[str], rounds: int) -> list[float]:
    query = QueryCatalog.load().get("why-allowed")
    times = []
    for i in range(rounds):
        action = actions[i % len(actions)]
        started = time.perf_counter()
        rows = list(execute(store, query.text, bound=bind(query, {"action": action})))
        times.append(time.perf_counter() - started)
        assert len(rows) == 1, (action, rows)
    return times


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(home: Path, workers: int) -> tuple[subprocess.Popen[bytes], str, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "cradle_kg", "serve", "--home", str(home),
                             "--port", str(port), "--workers", str(workers)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    while True:
        if proc.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return proc, url, time.perf_counter() - started
        except httpx.HTTPError:
            time.sleep(0.5)


def load(url: str, actions: list[str], *, clients: int, seconds: float,
         via: str) -> tuple[float, int, int, list[float]]:
    query = QueryCatalog.load().get("why-allowed").text
    done = [0] * clients
    errors = [0] * clients
    latencies: list[list[float]] = [[] for _ in range(clients)]
    stop = time.perf_counter() + seconds

    def client(k: int) -> None:
        with httpx.Client(timeout=30) as http:
            i = k
            while time.perf_counter() < stop:
                action = actions[i % len(actions)]
                t0 = time.perf_counter()
                if via == "named":
                    res = http.get(url + "/queries/why-allowed", params={"action": action},
                                   headers={"Accept": "application/sparql-results+json"})
                else:  # a client that writes the IRI into its own query text
                    text = query.replace("WHERE {", f"WHERE {{ VALUES ?action {{ <{action}> }}", 1)
                    res = http.post(url + "/sparql", data={"query": text},
                                    headers={"Accept": "application/sparql-results+json"})
                latencies[k].append(time.perf_counter() - t0)
                if res.status_code == 200 and res.json()["results"]["bindings"]:
                    done[k] += 1
                else:
                    errors[k] += 1
                i += clients

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    return sum(done) / elapsed, sum(done), sum(errors), [x for ls in latencies for x in ls]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    t0 = time.perf_counter()
    home = build_home(args.triples)
    say(f"home: {home} (ready in {time.perf_counter() - t0:.1f} s)")
    store = OxigraphStore(home / "graph")
    try:
        say(f"store: {len(store.store):,} quads, {len(store.run_graphs()):,} run graphs")
        actions = sample_actions(store, 500)
        library_path(store, actions, 50)  # warm the caches
        times = library_path(store, actions, args.rounds)
    finally:
        store.close()
    say(f"library path, why-allowed over {args.rounds} calls: "
        f"p50 {percentile(times, .5) * 1e3:.2f} ms  p90 {percentile(times, .9) * 1e3:.2f} ms  "
        f"p99 {percentile(times, .99) * 1e3:.2f} ms  (target p50 <= 10 ms)")

    proc, url, startup = start_server(home, args.workers)
    try:
        say(f"server: {args.workers} workers, ready in {startup:.1f} s (snapshot + load)")
        load(url, actions, clients=args.clients, seconds=2, via="named")  # warm up
        for via in ("named", "sparql"):
            qps, ok, bad, lat = load(url, actions, clients=args.clients, seconds=args.seconds,
                                     via=via)
            say(f"endpoint ({'/queries/why-allowed' if via == 'named' else '/sparql POST'}), "
                f"{args.clients} concurrent clients, {args.seconds:g} s: {qps:.0f} queries/s "
                f"({ok} answered, {bad} errors; latency p50 {percentile(lat, .5) * 1e3:.1f} ms, "
                f"p99 {percentile(lat, .99) * 1e3:.1f} ms)  (target >= 300 queries/s)")
    finally:
        proc.terminate()
        proc.wait(30)
    say(f"machine: {os.cpu_count()} CPUs")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "bench_sparql.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
