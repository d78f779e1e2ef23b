"""Which heavy modules a CLI command imports: start-up time is part of the product (issue 17).

:func:`imported_after` runs ``cradle-kg ARGV`` in a fresh interpreter (the real ``main``,
stdout kept) and returns what it printed and which of the named modules it had imported.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable

#: graph, SHACL, HTTP, server, policy and OWL engines
HEAVY_ROOTS = ("pyshacl", "rdflib", "httpx", "fastapi", "uvicorn", "cedarpy", "owlready2")


def imported_after(argv: Iterable[str], *, roots: Iterable[str] = HEAVY_ROOTS,
                   modules: Iterable[str] = (), suffixes: Iterable[str] = (),
                   prefix: str = "") -> tuple[str, list[str]]:
    """Run ``cradle-kg argv``; its stdout, and the imported modules whose top package is in
    ``roots``, or that are in ``modules``, or that start with ``prefix`` and end with one of
    ``suffixes``."""
    probe = (f"import sys; sys.argv = ['cradle-kg', *{list(argv)!r}]\n"
             "from cradle_kg.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {tuple(roots)!r} "
             f"or m in {tuple(modules)!r} "
             f"or ({prefix!r} and m.startswith({prefix!r}) and m.endswith({tuple(suffixes)!r})))\n"
             "print('HEAVY', heavy, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    heavy = [line for line in done.stderr.splitlines() if line.startswith("HEAVY ")]
    assert heavy, done.stderr[-500:]
    return done.stdout, ast.literal_eval(heavy[-1][len("HEAVY "):])
