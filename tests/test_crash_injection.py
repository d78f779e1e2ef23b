"""The crash-injection harness: at least 200 real SIGKILLs, zero duplicates, zero lost events.

The full run (``bench/crash_injection.py`` with its default of 200 kills) is exercised
here, as a separate process so that its forked children start from a clean,
single-threaded parent. The harness's own checkers are tested first: a harness that
cannot see a duplicate or a lost event would pass anything.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from cradle_kg import Runtime
from cradle_kg.crashpoints import CRASH_POINTS
from cradle_kg.demo.scenario import demo_ledger

from .conftest import proposal

BENCH = Path(__file__).resolve().parents[1] / "bench" / "crash_injection.py"


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crash_injection", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_harness_sees_a_duplicated_effect(home: Path) -> None:
    harness = _harness()
    ledger = demo_ledger(home)
    ledger.credit(key="idem:k1", account="a", amount=1)
    assert harness.duplicated_keys(home) == []
    ledger.credit(key="idem:k1", account="a", amount=1)  # the mail leaves twice
    assert harness.duplicated_keys(home) == ["idem:k1"]


def test_the_harness_sees_a_lost_event_and_an_effect_without_intent(home: Path) -> None:
    harness = _harness()
    with Runtime(home) as rt:
        rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 2}))
        events = list(rt.journal.events())
    log = home / "acked.log"
    log.write_text("".join(f"{e.seq} {e.hash}\n" for e in events))
    assert harness.lost_events(home, log) == 0
    assert harness.effects_without_intent(home) == 0
    log.write_text(log.read_text() + f"{events[-1].seq + 1} sha256:{'0' * 64}\n")
    assert harness.lost_events(home, log) == 1
    demo_ledger(home).credit(key="idem:rogue", account="a",
                                                          amount=1)
    assert harness.effects_without_intent(home) == 1


@pytest.mark.slow
def test_two_hundred_random_sigkills_no_duplicate_no_lost_event(scratch: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CRADLE_CRASH_AT"}
    # the home on tmpfs (``scratch``): the same 200 kills, without a disk's fsync per commit
    # (most of this run's time was waiting on them; a SIGKILL leaves what the victim wrote
    # in the page cache on any file system)
    done = subprocess.run([sys.executable, str(BENCH), "--kills", "200", "--json",
                           "--home", str(scratch / "home")],
                          capture_output=True, text=True, env=env, timeout=900, check=False,
                          cwd=BENCH.parents[1])
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(done.stdout)
    print(json.dumps(figures, indent=2))  # the figures quoted in the README
    assert figures["kill_points"] >= 200
    assert figures["duplicated_effects"] == 0
    assert figures["effects_without_intent"] == 0
    assert figures["lost_events"] == 0 and figures["acknowledged_events_checked"] > 1000
    assert figures["chain_intact"] is True
    assert figures["dangling_at_end"] == 0
    # every crash point was hit, and recovery had real work: found effects and retries
    assert set(figures["kills_by_point"]) >= set(CRASH_POINTS)
    assert figures["reconciliations"].get("reconciled", 0) > 0
    assert figures["reconciliations"].get("retried", 0) > 0


@pytest.mark.slow
def test_four_workers_on_one_postgres_journal_sigkilled(pg_url: str, scratch: Path) -> None:
    """The same harness with 4 victims at once on one PostgreSQL journal (a short run; the
    README quotes the full one: ``--kills 200 --workers 4 --postgres``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CRADLE_CRASH_AT",
                                                            "CRADLE_JOURNAL_URL")}
    done = subprocess.run([sys.executable, str(BENCH), "--kills", "24", "--workers", "4",
                           "--journal", pg_url, "--json", "--seed", "11",
                           "--home", str(scratch / "home")],  # its ledger and graph on tmpfs
                          capture_output=True, text=True, env=env, timeout=900, check=False,
                          cwd=BENCH.parents[1])
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(done.stdout)
    assert figures["journal"] == "postgresql" and figures["workers"] == 4
    assert figures["kill_points"] >= 24
    assert figures["duplicated_effects"] == 0 and figures["effects_without_intent"] == 0
    assert figures["lost_events"] == 0 and figures["acknowledged_events_checked"] > 100
    assert figures["chain_intact"] is True and figures["dangling_at_end"] == 0
