"""Our endpoint vs ``oxigraph serve-read-only`` on the same store and mix, side by side.

The store is the 1.1 M-quad home of :func:`synthetic.build_home` (``--triples``). Oxigraph's
own server reads a checkpoint of it (``Store.backup``, union default graph); ours is a real
``cradle-kg serve --home`` process, which compacts its private copy of the store in the
background once its workers are ready (the loads start when that is done). Oxigraph's
read-only server cannot compact the files it is given, so it is measured twice: on the
checkpoint as the home's writer left it (the comparison the issue asks for) and on a
compacted copy (``Store.optimize``: what compaction alone is worth). All get the same mix
over keep-alive HTTP clients (threads, ``httpx``): ``why-allowed`` for a sampled action as
a client would send it (the IRI written into the text, POST to the query URL) — a point
query — and, one in ten, a small aggregate (decisions per verdict). Every answer is
compared between the servers first (same rows). Figures, each server in turn, interleaved
over ``--rounds``:

* **ready**: process start until the first answered query (then, for ours, the loads
  wait until ``/healthz`` says the store is compacted, the quads are counted and every
  worker is ready — the loads measure the steady state; the time to that point is
  printed too);
* **throughput** at 1 and at 8 clients (queries/s) and the ratio ours/theirs;
* **point p50** at 1 client and the difference (our overhead per query);
* **CPU per query**: CPU seconds the server (and its workers) used during a load, per
  answered query — what a query costs, whatever share of the shared cores each got;
* **memory**: RSS of the server and its worker processes, right after the load and again
  one second later (at rest: each server as an idle deployment holds it); and PSS (each
  shared page divided among the processes that share it: the workers are forks of one
  process), the honest sum for several processes.

* **a timeout**: a query far over the time limit (both get ``--timeout 2``), then the next
  40 queries at once: its status, how long it took, the p50 and max of the next ones.

Run: ``.venv/bin/python bench/bench_endpoint.py [--seconds 5] [--rounds 3]``; needs the
``oxigraph`` CLI (PyPI ``oxigraph``, in the ``dev`` extra). Prints figures and the load
average; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pyoxigraph as ox

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import build_home

from cradle_kg.graph.queries import QueryCatalog
from cradle_kg.storage.oxigraph import OxigraphStore

C = "https://w3id.org/cradle#"
AGGREGATE = (f"SELECT ?v (COUNT(?d) AS ?n) WHERE {{ ?d a <{C}Decision> ; <{C}verdict> ?v }} "
             "GROUP BY ?v ORDER BY ?v")
JSON = {"Accept": "application/sparql-results+json"}
#: far beyond the time limit on this store
RUNAWAY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
#: the time limit both servers are given (seconds)
TIMEOUT = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kb(pid: int, *, pss: bool = False) -> int:
    """RSS (or PSS) of a process and all its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            source, key = (f"/proc/{p}/smaps_rollup", "Pss:") if pss \
                else (f"/proc/{p}/status", "VmRSS:")
            for line in Path(source).read_text().splitlines():
                if line.startswith(key):
                    total += int(line.split()[1])
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(c) for c in children)
    return total


def cpu_s(pid: int, *, own_only: bool = False) -> float:
    """CPU seconds (user + system) used by a process (and all its descendants) so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        if not own_only:
            todo.extend(int(c) for c in children)
    return total


class Endpoint:
    def __init__(self, name: str, argv: list[str], url: str, health: str) -> None:
        self.name, self.url = name, url
        started = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited")
            try:
                if httpx.post(url, data={"query": "ASK {}"}, headers=JSON,
                              timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
        self.ready = time.perf_counter() - started
        #: ours: start until its private store was compacted and published
        self.compacted = 0.0
        if health:  # ours: the loads measure the steady state: the store compacted, the
            base = url.rsplit("/", 1)[0]  # quads counted, every worker ready
            while True:
                try:
                    doc = httpx.get(base + health, timeout=2).json()
                    if doc["triples"] >= 0 and doc["workers_ready"] == doc["workers"] \
                            and doc["compaction"] not in ("pending", "running"):
                        self.compacted = time.perf_counter() - started
                        break
                except (httpx.HTTPError, ValueError, KeyError):
                    pass
                time.sleep(0.05)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def texts(actions: list[str]) -> list[str]:
    query = QueryCatalog.load().get("why-allowed").text
    out = []
    for i, action in enumerate(actions):
        out.append(AGGREGATE if i % 10 == 9 else
                   query.replace("WHERE {", f"WHERE {{ VALUES ?action {{ <{action}> }}", 1))
    return out


def ask(http: httpx.Client, url: str, text: str) -> list[object]:
    res = http.post(url, data={"query": text}, headers=JSON)
    res.raise_for_status()
    rows = res.json()["results"]["bindings"]
    return sorted(str(sorted((k, v["value"]) for k, v in r.items())) for r in rows)


def load(url: str, mix: list[str], clients: int, seconds: float,
         pid: int | None = None) -> tuple[float, list[float]]:
    done = [0] * clients
    lat: list[list[float]] = [[] for _ in range(clients)]
    stop = time.perf_counter() + seconds

    def client(k: int) -> None:
        with httpx.Client(timeout=60) as http:
            i = k
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                res = http.post(url, data={"query": mix[i % len(mix)]}, headers=JSON)
                lat[k].append(time.perf_counter() - t0)
                if res.status_code == 200:
                    done[k] += 1
                i += clients

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    cpu0 = cpu_s(pid) if pid else 0.0
    own0 = cpu_s(pid, own_only=True) if pid else 0.0
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if pid:
        answered = max(1, sum(done))
        load.cpu_per_query = (cpu_s(pid) - cpu0) / answered  # type: ignore[attr-defined]
        load.own_per_query = (cpu_s(pid, own_only=True) - own0) / answered  # type: ignore[attr-defined]
    return sum(done) / elapsed, [x for ls in lat for x in ls]


def after_timeout(url: str, mix: list[str], got: dict[str, list[float]]) -> None:
    """A query over the time limit, then normal queries at once: what the timeout cost."""
    with httpx.Client(timeout=60) as http:
        t0 = time.perf_counter()
        try:
            res = http.post(url, data={"query": RUNAWAY}, headers=JSON, timeout=8 * TIMEOUT)
            status, body = res.status_code, res.text[-60:]
        except httpx.HTTPError as exc:  # no answer at all within 8x the limit
            status, body = 0, f"{type(exc).__name__}"
        got.setdefault("timeout_status", []).append(status)
        got.setdefault("timeout_body", []).append(body)  # type: ignore[arg-type]
        got.setdefault("timeout_s", []).append(time.perf_counter() - t0)
        lat = []
        for text in mix[:40]:
            t1 = time.perf_counter()
            ok = http.post(url, data={"query": text}, headers=JSON).status_code == 200
            lat.append(time.perf_counter() - t1 if ok else float("inf"))
        got.setdefault("next_max", []).append(max(lat))
        got.setdefault("next_p50", []).append(statistics.median(lat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=1_100_000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--point-only", action="store_true", help="no aggregate in the mix")
    args = parser.parse_args()
    home = build_home(args.triples)
    work = Path(tempfile.mkdtemp(prefix="bench-endpoint-"))
    store = OxigraphStore(home / "graph")
    try:
        quads = len(store.store)
        found = [r["a"].value for r in store.query(
            f"SELECT ?a WHERE {{ ?a <{C}authorizedBy> ?d }} LIMIT 20000")]
        store.store.backup(str(work / "theirs"))
        store.store.backup(str(work / "theirs-compacted"))
    finally:
        store.close()
    # the reference for what a compacted store alone gives: ours compacts its private copy
    # (`serve`'s background compaction), Oxigraph's read-only server cannot compact its own
    compacted = ox.Store(str(work / "theirs-compacted"))
    compacted.optimize()
    compacted.flush()
    del compacted
    random.Random(7).shuffle(found)
    mix = texts(found[:400])
    if args.point_only:
        mix = [t for t in mix if t != AGGREGATE]
    oxigraph = shutil.which("oxigraph") or str(Path(sys.executable).parent / "oxigraph")
    names = ("theirs", "compacted", "ours")
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    print(f"store: {quads:,} quads; mix: {len(mix)} texts (1 in 10 an aggregate); "
          f"{args.workers} workers; load {os.getloadavg()[0]:.1f}", flush=True)
    for rnd in range(args.rounds):
        for name in names:
            port = free_port()
            if name == "ours":
                ep = Endpoint(name, [sys.executable, "-m", "cradle_kg", "serve", "--home",
                                     str(home), "--port", str(port), "--workers",
                                     str(args.workers), "--timeout", str(TIMEOUT)],
                              f"http://127.0.0.1:{port}/sparql", "/healthz")
            else:
                folder = work / ("theirs" if name == "theirs" else "theirs-compacted")
                ep = Endpoint(name, [oxigraph, "serve-read-only", "--location",
                                     str(folder), "--bind", f"127.0.0.1:{port}",
                                     "--union-default-graph", "--timeout-s", str(TIMEOUT)],
                              f"http://127.0.0.1:{port}/query", "")
            try:
                got = figures[name]
                got.setdefault("ready", []).append(ep.ready)
                got.setdefault("compacted_s", []).append(ep.compacted)
                if rnd == 0:
                    with httpx.Client(timeout=60) as http:
                        answers = [ask(http, ep.url, t) for t in mix[:60]]
                    got.setdefault("answers", []).append(hash(str(answers)))
                load(ep.url, mix, 2, 1.0)  # warm-up
                for clients in (1, 8):
                    qps, lat = load(ep.url, mix, clients, args.seconds, ep.proc.pid)
                    got.setdefault(f"qps{clients}", []).append(qps)
                    got.setdefault(f"cpu{clients}", []).append(
                        load.cpu_per_query)  # type: ignore[attr-defined]
                    got.setdefault(f"own{clients}", []).append(
                        load.own_per_query)  # type: ignore[attr-defined]
                    if clients == 1:
                        got.setdefault("p50", []).append(statistics.median(lat))
                got.setdefault("rss", []).append(rss_kb(ep.proc.pid) / 1024)
                got.setdefault("pss", []).append(rss_kb(ep.proc.pid, pss=True) / 1024)
                time.sleep(1.0)  # at rest: the same second for both servers
                got.setdefault("rss_rest", []).append(rss_kb(ep.proc.pid) / 1024)
                got.setdefault("pss_rest", []).append(rss_kb(ep.proc.pid, pss=True) / 1024)
                after_timeout(ep.url, mix, got)  # after the memory: a runaway may grow it
                got.setdefault("load", []).append(os.getloadavg()[0])
            finally:
                ep.close()
        print(f"round {rnd + 1} done (load {os.getloadavg()[0]:.1f})", flush=True)
    ours, theirs, comp = figures["ours"], figures["theirs"], figures["compacted"]
    print("same answers on the first 60 texts:",
          ours["answers"] == theirs["answers"] == comp["answers"])
    print(f"ours: compacted {statistics.median(ours['compacted_s']):.1f} s after start "
          "(median; the loads start once it is done)")

    def row(label: str, key: str, scale: float, unit: str, better: str) -> None:
        o, t, c = ours[key], theirs[key], comp[key]
        ratio = statistics.median(o) / statistics.median(t)
        ratio_c = statistics.median(o) / statistics.median(c)
        print(f"{label:<22} ours min {min(o) * scale:8.2f} med {statistics.median(o) * scale:8.2f}"
              f" | oxigraph min {min(t) * scale:8.2f} med {statistics.median(t) * scale:8.2f}"
              f" | on a compacted copy med {statistics.median(c) * scale:8.2f}"
              f" {unit}  ratio {ratio:.2f}x (compacted: {ratio_c:.2f}x; {better})")

    row("ready", "ready", 1, "s", "lower is better")
    row("throughput 1 client", "qps1", 1, "q/s", "higher is better")
    row("throughput 8 clients", "qps8", 1, "q/s", "higher is better")
    row("point p50, 1 client", "p50", 1e3, "ms", "lower is better")
    row("CPU per query, 1 client", "cpu1", 1e3, "ms", "lower is better")
    row("CPU per query, 8 clients", "cpu8", 1e3, "ms", "lower is better")
    row("memory (RSS)", "rss", 1, "MB", "lower is better")
    row("memory (PSS)", "pss", 1, "MB", "lower is better")
    row("memory 1 s later (RSS)", "rss_rest", 1, "MB", "lower is better")
    row("memory 1 s later (PSS)", "pss_rest", 1, "MB", "lower is better")
    print("of ours, the server process itself (the app; queries go to the workers), per query: "
          f"1 client {statistics.median(ours['own1']) * 1e3:.2f} ms, "
          f"8 clients {statistics.median(ours['own8']) * 1e3:.2f} ms (the rest is the workers)")
    row("runaway query answered in", "timeout_s", 1, "s", f"limit {TIMEOUT} s")
    row("next 40 queries, p50", "next_p50", 1e3, "ms", "lower is better")
    row("next 40 queries, max", "next_max", 1e3, "ms", "lower is better")
    print("runaway statuses: ours", ours["timeout_status"], "oxigraph", theirs["timeout_status"],
          "compacted", comp["timeout_status"])
    print("runaway answers: ours", ours["timeout_body"][:1], "oxigraph", theirs["timeout_body"][:1])
    overhead = (statistics.median(ours["p50"]) - statistics.median(theirs["p50"])) * 1e3
    overhead_c = (statistics.median(ours["p50"]) - statistics.median(comp["p50"])) * 1e3
    print(f"point-query overhead (median p50 difference): {overhead:+.2f} ms "
          f"(against the compacted copy: {overhead_c:+.2f} ms)")
    loads = ours["load"] + theirs["load"] + comp["load"]
    print(f"load average during the runs: {min(loads):.1f}-{max(loads):.1f}; "
          f"{os.cpu_count()} CPUs; {args.rounds} rounds, {args.seconds:g} s per figure")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
