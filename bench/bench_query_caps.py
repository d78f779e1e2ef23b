"""What the endpoint's join and operator caps cost a query: ``check_query`` with
``max_patterns`` and ``max_operators`` (``tests/security/test_343``) against the same
check without them, and against running the query, on the named queries of the repository.

    .venv/bin/python bench/bench_query_caps.py [--rounds 200]

For each named query (``queries/*.rq`` and the packs'), interleaved, ``rounds`` times:

- **plain**: ``check_query`` as before the caps (size, nesting, the SERVICE check);
- **capped**: the same with the caps the workers pass (both counts kept by text, as the
  named queries' texts are the same every time);
- **first**: both counts of a text not seen before (an ad-hoc query's first time);
- **run**: the query run (``execute``, as before) on the demo's graph, its answer read.

Prints the median of each in ms, summed over the queries, and the ratios. No timing
assertion anywhere: figures are for the README.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.demo.scenario import run_demo
from cradle_kg.graph.queries import QUERIES_DIR, execute
from cradle_kg.graph.sparql_guard import (
    MAX_QUERY_OPERATORS,
    MAX_QUERY_PATTERNS,
    check_query,
    operator_count,
    pattern_count,
)

ROOT = Path(__file__).resolve().parents[1]


def _read(result: object) -> object:
    """Every row of an answer (an ASK's is its boolean)."""
    return list(result) if isinstance(result, Iterable) else result


def _texts() -> list[str]:
    paths = sorted(QUERIES_DIR.glob("*.rq")) + sorted(ROOT.glob("packs/*/queries/*.rq"))
    return [p.read_text(encoding="utf-8") for p in paths]


def _ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def _rounds(texts: list[str], rounds: int, run: Callable[[str], object]
            ) -> dict[str, list[float]]:
    """Each kind of check (and the run), interleaved; each round's sum in ms."""
    times: dict[str, list[float]] = {k: [] for k in ("plain", "capped", "first", "run")}
    for i in range(rounds):
        for key in times:
            total = 0.0
            for text in texts:
                if key == "plain":
                    total += _ms(lambda t=text: check_query(t))
                elif key == "capped":
                    total += _ms(lambda t=text: check_query(
                        t, max_patterns=MAX_QUERY_PATTERNS, max_operators=MAX_QUERY_OPERATORS))
                elif key == "first":  # a text not seen before: a comment makes it new
                    total += _ms(lambda t=f"# {i}\n{text}": (pattern_count(t),
                                                               operator_count(t)))
                else:
                    total += _ms(lambda t=text: run(t))
            times[key].append(total)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    texts = _texts()
    with tempfile.TemporaryDirectory() as tmp:
        run_demo(Path(tmp) / "home")
        with Runtime(Path(tmp) / "home") as rt:
            graph = rt.graph()
            assert graph is not None
            times = _rounds(texts, args.rounds, lambda t: _read(execute(graph, t)))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{len(texts)} named queries, {args.rounds} rounds (median of each round's sum)")
    print(f"plain    {med['plain']:8.3f} ms")
    print(f"capped   {med['capped']:8.3f} ms   ({med['capped'] / med['plain']:.2f}x plain, "
          f"{(med['capped'] - med['plain']) / med['run']:.1%} of running them)")
    print(f"first    {med['first']:8.3f} ms   (both counts of texts not seen before)")
    print(f"run      {med['run']:8.3f} ms")


if __name__ == "__main__":
    main()
