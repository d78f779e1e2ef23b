"""Finding: gate 1 runs the customs pack's keyword extractor on every ``customs.classify``
(and ``customs.finalize_classification``) proposal — the domain pre-check — and its
patterns backtracked on the text an agent writes: ``spray tank`` followed by 2,000 spaces
held one core for about a minute (three adjacent whitespace runs: cubic), ``range`` or
``endurance`` and 20,000 spaces for seven seconds (two: quadratic), and a description of
``parts for `` repeated to 60,000 characters for 38 (each part phrase scanned to the end of
its sentence for the craft it is for), and ``drone `` repeated ten thousand times for nine
(each match compared with every earlier one) — all of them inside the 64 KiB an argument
may be.
Now each whitespace run is matched one way only (possessive), and the craft a part phrase
names is looked for within 120 characters of its ``for``/``of``, and a match is compared
with the matches before it by a sorted look-up: the extractor's work grows linearly with
the text (n log n for its matches).
Resource use is bounded by the CPU seconds a child process may use (``RLIMIT_CPU``),
not by a clock: the fixed extractor needs well under a second for all of these together.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "packs" / "customs.hs-router"
CPU_SECONDS = 20

CHILD = f"""
import importlib.util, resource, sys
resource.setrlimit(resource.RLIMIT_CPU, ({CPU_SECONDS}, {CPU_SECONDS}))
spec = importlib.util.spec_from_file_location(
    "h6_customs", {str(PACK / "__init__.py")!r}, submodule_search_locations=[{str(PACK)!r}])
module = importlib.util.module_from_spec(spec)
sys.modules["h6_customs"] = module
spec.loader.exec_module(module)
from h6_customs.governed import precheck
texts = [
    "UAV spray tank" + " " * 2000 + "x",
    "drone range" + " " * 20000 + "x",
    "drone endurance" + " " * 20000 + "x",
    ("parts for " * 6500)[:64000],
    "spare parts for" + " " * 20000 + "x",
    ("spare parts for x " * 3600)[:64000],
    ("drone BVLOS " * 6000)[:64000],
]
for text in texts:
    decision = precheck({{"description": text}})
    print(decision.status)
"""


def test_the_pre_check_of_a_hostile_description_is_linear() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    # before: killed at its CPU limit (returncode -9), nothing printed
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    statuses = done.stdout.split()
    assert len(statuses) == 7
    assert set(statuses) <= {"rejected", "needs_clarification"}


def test_what_the_patterns_read_is_unchanged() -> None:
    """The possessive runs and the bounded part phrase still read ordinary wording."""
    child = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location(
    "h6_customs", {str(PACK / "__init__.py")!r}, submodule_search_locations=[{str(PACK)!r}])
module = importlib.util.module_from_spec(spec)
sys.modules["h6_customs"] = module
spec.loader.exec_module(module)
from h6_customs.extraction import KeywordExtractor
text = ("Spare propellers for agricultural spraying drones; drone, maximum range  :  12 km, "
        "endurance up to 45 min, spray tank capacity of 16 l, wind resistance 12 m/s, "
        "MTOW 24,5 kg")
for c in KeywordExtractor().extract(text):
    print(c.predicate, c.value, c.unit)
"""
    done = subprocess.run([sys.executable, "-c", child], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    assert done.stdout.splitlines() == [
        "product_type propeller_or_rotor None",
        "part_of unmanned_aerial_vehicle None",
        "product_type unmanned_aerial_vehicle None",
        "maximum_range 12.0 km",
        "endurance 45.0 min",
        "aerosol_capacity 16.0 l",
        "gust_tolerance 12.0 m/s",
        "maximum_takeoff_weight 24.5 kg",
    ]
