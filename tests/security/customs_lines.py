"""A drone described in a customs line, run through ``customs.hs-router``'s governed example
runner (``adapters:run_example``) on a pack home, and what its filing must then show. Shared
by ``test_430``, ``test_434`` and ``test_492`` … ``test_494``."""

from __future__ import annotations

from pathlib import Path

from cradle_kg.packs import testing

PACK = Path(__file__).resolve().parents[2] / "packs" / "customs.hs-router"


def task_of(prefix: str, words: str) -> str:
    """A task id of its own for each wording (``prefix`` then the words, spelled safe)."""
    return prefix + "".join(c if c.isalnum() else f"-{ord(c):x}-" for c in words)


def run_line(home: testing.PackHome, description: str, task: str) -> dict[str, object]:
    """The runner's answer for one line: its status, permits, missing facts, and the
    governed calls (``governed``)."""
    runner = home.entry("adapters:run_example")
    result: dict[str, object] = runner(home.runtime, {"description": description,
                                                      "task": task})
    return result


def assert_permit_awaited(result: dict[str, object], permit: str) -> None:
    """The line needs ``permit`` alone, and its filing waits for a customs officer."""
    governed = result["governed"]
    assert isinstance(governed, dict)
    assert list(result["permits_required"]) == [permit], result  # type: ignore[call-overload]
    assert governed["finalize"]["outcome"] == "awaiting_approval"
