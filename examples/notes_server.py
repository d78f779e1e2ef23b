"""A small MCP server to put behind ``cradle-kg mcp proxy`` (official SDK, stdio).

    python examples/notes_server.py ./notes      # the notes live in ./notes/notes.json

``append`` writes a note and takes an idempotency ``key`` (the same key twice is one
write); ``read`` reads one back; ``count`` is a read nobody declared a contract for.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import FastMCP

STORE = Path(sys.argv[1] if len(sys.argv) > 1 else "notes")
server = FastMCP("notes", log_level="WARNING")


def _notes() -> dict[str, Any]:
    path = STORE / "notes.json"
    return dict(json.loads(path.read_text())) if path.exists() else {"notes": {}, "keys": []}


@server.tool()
def append(id: str, text: str, key: str = "") -> dict[str, Any]:
    """Write note `id` (a key already seen is answered without writing again)."""
    data = _notes()
    if not key or key not in data["keys"]:
        data["notes"][id] = text
        data["keys"].append(key)
        STORE.mkdir(parents=True, exist_ok=True)
        (STORE / "notes.json").write_text(json.dumps(data))
    return {"id": id, "text": data["notes"][id]}


@server.tool()
def read(id: str) -> dict[str, Any]:
    """Read note `id` (an error when there is none)."""
    notes = _notes()["notes"]
    if id not in notes:
        raise ValueError(f"no note {id}")
    return {"id": id, "text": notes[id]}


@server.tool()
def count() -> dict[str, Any]:
    """How many notes there are."""
    return {"count": len(_notes()["notes"])}


if __name__ == "__main__":
    server.run()
