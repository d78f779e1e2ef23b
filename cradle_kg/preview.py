"""What a view shows of a value it may not carry whole: a bounded preview.

A workflow run's input is its agent's, checked against the workflow's input schema and the
home's input limits (up to ``max_bytes``, 1 MiB, a run): a view polled by every person —
the inbox — carries a preview of it past a few KiB, its size, and where it is read whole.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

#: what a human step's item carries of its run's input: the input whole while its JSON is at
#: most this many characters; past it, a preview within that room (:func:`preview`), the
#: input's size and where to read it whole (tests/security/test_341)
MAX_ITEM_INPUT_CHARS = 4096
#: the longest string a preview keeps whole (cut after, with `…`)
MAX_PREVIEW_STRING = 256
#: the longest question an item carries (it quotes the input: cut after, with `…`)
MAX_ITEM_QUESTION = 1024


def step_input(run_id: str, value: Any) -> dict[str, Any]:
    """What a step's item carries of its run's input (:func:`bounded`; read whole in its
    workflow status). INVARIANT: an item is bounded whatever the workflow's input schema
    lets a run carry — before, every poll of every approver's inbox carried each run's
    whole input, up to 1 MiB a run (test_341)."""
    return bounded("input", value, f"/api/workflows/runs/{quote(run_id, safe=':')}")


def approval_action(approval_id: str, action: dict[str, Any]) -> dict[str, Any]:
    """What an approval's item carries of its action (:func:`bounded`; whole in the
    approval's own view, ``GET /api/approvals/{id}``, what the page shows before a person
    may approve). INVARIANT: an approval is decided on its whole action, never on this
    preview — before, every poll of every approver's inbox carried each pending action
    whole, up to 64 KiB each (tests/security/test_361)."""
    return bounded("action", action, f"/api/approvals/{quote(approval_id, safe=':')}")


def bounded(name: str, value: Any, whole: str) -> dict[str, Any]:
    """``name``: ``value`` whole while its JSON is at most :data:`MAX_ITEM_INPUT_CHARS`;
    past it, a :func:`preview` — with ``name_cut`` (whether it was cut), ``name_bytes``
    (its size) and ``whole_name`` (``whole``: where it is read whole)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    over = len(text) > MAX_ITEM_INPUT_CHARS
    return {name: preview(value, MAX_ITEM_INPUT_CHARS) if over else value,
            f"{name}_cut": over, f"{name}_bytes": len(text.encode("utf-8", "surrogatepass")),
            f"whole_{name}": whole}


def preview(value: Any, room: int) -> Any:
    """``value`` (JSON) shown within about ``room`` characters of JSON: each string (a key
    too) cut at :data:`MAX_PREVIEW_STRING` characters with ``…``; once the room is spent, a
    container's other entries are counted (``"…": "N more"``), not shown."""
    left = [room]
    return _shown(value, left)


def _shown(value: Any, left: list[int]) -> Any:
    if isinstance(value, str):
        shown = cut(value, min(MAX_PREVIEW_STRING, max(left[0], 1)))
        left[0] -= len(shown) + 3
        return shown
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        left[0] -= 2
        for i, (key, item) in enumerate(value.items()):
            if left[0] <= 0:
                out["…"] = f"{len(value) - i} more"
                break
            name = _shown(key, left)  # the key first: the room is spent in reading order
            out[name] = _shown(item, left)
        return out
    if isinstance(value, list):
        entries: list[Any] = []
        left[0] -= 2
        for i, item in enumerate(value):
            if left[0] <= 0:
                entries.append(f"… {len(value) - i} more")
                break
            entries.append(_shown(item, left))
        return entries
    left[0] -= len(json.dumps(value)) + 1  # a number, a boolean, null: a few characters
    return value


def cut(text: str, at: int) -> str:
    """``text`` whole, or its first ``at`` characters and ``…``."""
    return text if len(text) <= at else text[:at] + "…"
