"""The demo's homes built once per pytest run and copied, instead of built by each module.

``run_demo`` takes 4 s (13-25 s with the pilot packs) here, and several modules — in
several xdist workers — each built the same one to read or to change a copy of. The first
to need one builds it into the run's temporary folder (shared by the workers) under a
lock, its steps pickled beside it (written last: a template is whole or absent); each
caller copies the folder (~0.2 s). Always embedded (the home's own SQLite journal and
graph store — a folder is all of it); a caller on another backend builds its own.
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import DemoStep, run_demo
from cradle_kg.storage import JOURNAL_URL_ENV
from cradle_kg.storage.graph_config import GRAPH_URL_ENV


def run_root(factory: pytest.TempPathFactory) -> Path:
    """This pytest run's temporary folder: shared by its xdist workers (each has a
    ``popen-gwN`` folder inside it), the session's own without xdist."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def demo_template(factory: pytest.TempPathFactory, *, pilots: bool
                  ) -> tuple[Path, list[DemoStep]]:
    """The run's embedded demo home (never to be changed: copy it) and its steps."""
    shared = run_root(factory) / ("pilots-demo-template" if pilots else "demo-template")
    shared.mkdir(exist_ok=True)
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = shared / "steps.pickle"
        if not done.is_file():
            with pytest.MonkeyPatch.context() as env:
                env.delenv(GRAPH_URL_ENV, raising=False)
                env.delenv(JOURNAL_URL_ENV, raising=False)
                steps = run_demo(shared / "home", pilots=pilots)
            tmp = done.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(steps))
            tmp.replace(done)
        loaded: list[DemoStep] = pickle.loads(done.read_bytes())  # written by this run
    return shared / "home", loaded


def embedded() -> bool:
    """No journal URL and no remote graph store in this environment."""
    return not (os.environ.get(JOURNAL_URL_ENV) or os.environ.get(GRAPH_URL_ENV))


#: the session's factory, for callers that are handed none (``server/conftest.py``'s
#: ``make_demo_home``): set by ``tests/conftest.py``'s ``_demo_template_factory``
FACTORY: list[pytest.TempPathFactory] = []


def demo_home(home: Path, factory: pytest.TempPathFactory | None = None, *,
              pilots: bool = False) -> list[DemoStep]:
    """``run_demo(home, pilots=pilots)``: a copy of the run's template when this
    environment is embedded (``home`` must not exist yet), else built there."""
    factory = factory if factory is not None else (FACTORY[0] if FACTORY else None)
    if factory is None or not embedded():
        return run_demo(home, pilots=pilots)
    template, steps = demo_template(factory, pilots=pilots)
    shutil.copytree(template, home, symlinks=True)
    return steps
