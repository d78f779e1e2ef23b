"""The suite's test modules rewritten for pytest's assertions once, before its processes start.

pytest imports a test module (and a conftest, and the ``-p`` plugins of ``pyproject.toml``)
through its assertion rewriter: the source parsed, each ``assert`` rewritten to explain
itself, the tree compiled — and the result cached beside the module
(``__pycache__/NAME.cpython-311-pytest-X.Y.Z.pyc``) unless ``PYTHONDONTWRITEBYTECODE`` is set,
as it is in this workplace's shells and on many CI machines. Each of ``./dev test``'s
processes collects the whole suite (pytest-xdist checks they all see the same tests), so
each rewrote the ~400 modules again: ~15 s of CPU a process, ~9.5 s of it rewriting (the
rest imports), four processes at once on 2 cores at the suite's start.

``python -m tests.rewrite_ahead`` writes those cached files first, whatever that variable
says (as ``compileall`` does for the package), on every core; the processes then read them.
The file is pytest's own format, made by pytest's own functions, checked by pytest when it
reads it (a hash of the source, the file's path): one that is stale, or that another pytest
would not accept, is rewritten by the test process as before — this step can make the
suite's start faster, never change what runs. Nothing is written when pytest's internals
are not the ones this was written against (the step is then a no-op).
"""

from __future__ import annotations

import os
import sys
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]


def modules(root: Path = ROOT) -> list[Path]:
    """What pytest rewrites in this repository: the test modules and conftests of the
    suite's paths (pytest's default ``test_*.py``) and the plugins ``addopts`` names."""
    found: set[Path] = set()
    for base in (root / "tests", *sorted((root / "packs").glob("*/tests"))):
        for pattern in ("test_*.py", "conftest.py"):
            found.update(p for p in base.rglob(pattern) if "__pycache__" not in p.parts)
    found.update(root / "tests" / f"{name}.py" for name in ("suite_backend", "suite_order"))
    return sorted(p for p in found if p.is_file())


def _rewrite(path: Path) -> bool:
    """The cached rewrite of ``path`` written unless a current one is there; ``True`` when
    written. Any error (another pytest's internals, a read-only folder): nothing written."""
    try:
        from _pytest.assertion import rewrite

        pyc = rewrite.get_cache_dir(path) / (path.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(path, pyc) is not None:
            return False
        if not rewrite.try_makedirs(pyc.parent):
            return False
        # the source's hash (its stat in older pytest) and the code, as the worker would
        # make them: no config — it only switches the assertion-pass hook, off here
        checked, code = rewrite._rewrite_test(path, None)  # type: ignore[arg-type]
        return bool(rewrite._write_pyc(SimpleNamespace(trace=lambda _m: None), code,
                                       checked, pyc))
    except Exception:
        return False


def _pass_hook_on(root: Path = ROOT) -> bool:
    """``enable_assertion_pass_hook`` changes the rewrite: then the processes rewrite."""
    with (root / "pyproject.toml").open("rb") as fh:
        ini = tomllib.load(fh).get("tool", {}).get("pytest", {}).get("ini_options", {})
    return bool(ini.get("enable_assertion_pass_hook", False))


def main() -> int:
    if _pass_hook_on():
        return 0
    paths = modules()
    workers = max(1, len(os.sched_getaffinity(0)))
    with ProcessPoolExecutor(workers) as pool:
        written = sum(pool.map(_rewrite, paths, chunksize=8))
    if "-v" in sys.argv[1:]:
        print(f"{written} of {len(paths)} test modules rewritten ahead")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
