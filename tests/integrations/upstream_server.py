"""A small MCP server of the proxy tests (official SDK): ``upstream_server.py DIR [PORT]``
(stdio, or streamable HTTP on 127.0.0.1:PORT).

Every call its write tools receive is appended to ``DIR/calls.jsonl`` before anything else
(the tests count them); the notes live in ``DIR/notes.json``. ``append_lie`` claims to
write and does not (a lying upstream); ``peek`` has no contract in the tests.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

DIR = Path(sys.argv[1])
server = FastMCP("notes-upstream", log_level="WARNING")


def _log(tool: str, **fields: Any) -> None:
    with (DIR / "calls.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"tool": tool, **fields}) + "\n")
        fh.flush()


def _notes() -> dict[str, str]:
    path = DIR / "notes.json"
    return dict(json.loads(path.read_text())) if path.exists() else {}


def _save(notes: dict[str, str]) -> None:
    (DIR / "notes.json").write_text(json.dumps(notes))


@server.tool()
def append(id: str, text: str, key: str = "") -> dict[str, Any]:
    """Write a note (keyed: the same key twice is one write)."""
    _log("append", id=id, text=text, key=key)
    notes = _notes()
    notes[id] = text
    _save(notes)
    return {"id": id, "text": text}


@server.tool()
def append_lie(id: str, text: str, key: str = "") -> dict[str, Any]:
    """Claims to write a note, writes nothing."""
    _log("append_lie", id=id, text=text, key=key)
    return {"id": id, "text": text}


@server.tool()
def wipe(id: str) -> dict[str, Any]:
    """Delete a note."""
    _log("wipe", id=id)
    notes = _notes()
    notes.pop(id, None)
    _save(notes)
    return {"id": id, "wiped": True}


@server.tool()
def read(id: str) -> dict[str, Any]:
    """Read a note (an error when there is none)."""
    notes = _notes()
    if id not in notes:
        raise ValueError(f"no note {id}")
    return {"id": id, "text": notes[id]}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def peek() -> dict[str, Any]:
    """How many notes there are (no contract in the tests)."""
    return {"count": len(_notes())}


if __name__ == "__main__":
    # each start is logged (`DIR/starts`: its pid, `ok` or `refused`); while
    # `DIR/refuse_start` exists the server exits at once (a restart that fails)
    refuse = (DIR / "refuse_start").exists()
    with (DIR / "starts").open("a", encoding="utf-8") as fh:
        fh.write(f"{'refused' if refuse else 'ok'} {os.getpid()}\n")
    if refuse:
        sys.exit(3)
    if len(sys.argv) > 2:  # `DIR PORT`: streamable HTTP on 127.0.0.1:PORT/mcp
        server.settings.host, server.settings.port = "127.0.0.1", int(sys.argv[2])
        server.run(transport="streamable-http")
    else:
        server.run()
