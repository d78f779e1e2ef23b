"""``preview``: what the inbox carries of a run's input — whole while small, bounded past it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cradle_kg.preview import MAX_ITEM_INPUT_CHARS, MAX_PREVIEW_STRING, preview, step_input


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"leaf": "x" * 1000}
    for _ in range(levels):
        node = {"n": node, "m": ["y" * 1000] * 3}
    return node


#: JSON an agent may put in a run's input, each far past the room
LARGE = {
    "a long string": {"note": "n" * 1_000_000},
    "a long list": {"items": list(range(200_000))},
    "a wide object": {f"k{i}": f"value {i}" for i in range(50_000)},
    "a long key": {"k" * 100_000: 1},
    "deep nesting": _deep(30),
    "lists of lists": [[["z" * 300] * 50] * 50] * 20,
}


@pytest.mark.parametrize("name", sorted(LARGE))
def test_a_large_input_is_previewed_within_the_room(name: str) -> None:
    item = step_input("wf:1", LARGE[name])
    shown = json.dumps(item["input"], ensure_ascii=False)
    # the room, plus at most one string and one marker a level over it
    assert len(shown) <= MAX_ITEM_INPUT_CHARS + 32 * (MAX_PREVIEW_STRING + 32), len(shown)
    assert item["input_cut"] is True
    assert item["input_bytes"] == len(json.dumps(LARGE[name], ensure_ascii=False,
                                                 separators=(",", ":")).encode())
    assert item["whole_input"] == "/api/workflows/runs/wf:1"


def test_what_is_left_out_is_said() -> None:
    shown = preview({"items": list(range(10_000)), "note": "n" * 1000}, 200)
    assert shown["items"][-1].startswith("… ") and shown["items"][-1].endswith(" more")
    assert shown["…"] == "1 more"  # the note: no room left for it
    assert preview({f"k{i}": i for i in range(1000)}, 100)["…"].endswith("more")


def test_a_small_input_is_carried_whole() -> None:
    value = {"account": "acct-1", "amount": 12, "tags": ["a", "b"], "ok": True, "x": None}
    assert step_input("wf:2", value) == {
        "input": value, "input_cut": False,
        "input_bytes": len(json.dumps(value, separators=(",", ":"))),
        "whole_input": "/api/workflows/runs/wf:2"}
