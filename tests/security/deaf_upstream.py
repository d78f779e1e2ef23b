"""A stdio MCP upstream of the proxy tests, written by hand (no SDK, one thread), so that
it can stop reading its input while it goes on running: ``deaf_upstream.py DIR``.

Tools: ``append`` (a keyed write: logged to ``DIR/calls.jsonl`` first, as
``upstream_server.py`` logs it), ``read``, ``deafen`` (closes its stdin, *then* answers,
and the process sleeps on with its stdout open: the proxy's next write fails with
``EPIPE`` while the process is still running) and ``append`` of the id ``vanish`` (logged
— it reached the upstream — then the process exits without an answer). Each start is
logged to ``DIR/starts`` as ``ok PID``. One thread: nothing else reads stdin when it is
closed, so the proxy's next write finds no reader at all.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

DIR = Path(sys.argv[1])
NOTES: dict[str, str] = {}
STRING = {"type": "string"}
TOOLS = [
    {"name": "append", "inputSchema": {"type": "object", "properties": {
        "id": STRING, "text": STRING, "key": STRING}, "required": ["id", "text"]}},
    {"name": "read", "inputSchema": {"type": "object", "properties": {"id": STRING},
                                     "required": ["id"]}},
    {"name": "deafen", "inputSchema": {"type": "object", "properties": {}}},
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(rid: Any, content: dict[str, Any], *, error: bool = False) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": {
        "content": [{"type": "text", "text": json.dumps(content)}],
        "structuredContent": content, "isError": error}})


def call(rid: Any, name: str, args: dict[str, Any]) -> None:
    if name == "append":
        with (DIR / "calls.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"tool": "append", **args}) + "\n")
        if args["id"] == "vanish":
            os._exit(0)  # it reached the upstream, which leaves without an answer
        NOTES[args["id"]] = args["text"]
        answer(rid, {"id": args["id"], "text": args["text"]})
    elif name == "read":
        found = args["id"] in NOTES
        answer(rid, {"id": args["id"], "text": NOTES[args["id"]]} if found
               else {"text": f"no note {args['id']}"}, error=not found)
    elif name == "deafen":
        os.close(0)  # no reader of the proxy's pipe from now on
        answer(rid, {"deaf": True})
        while True:  # running, its stdout open: until the proxy ends it
            time.sleep(3600)


def main() -> None:
    with (DIR / "starts").open("a", encoding="utf-8") as fh:
        fh.write(f"ok {os.getpid()}\n")
    while line := sys.stdin.buffer.readline():
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue  # a notification
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "deaf", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            call(rid, message["params"]["name"], message["params"].get("arguments", {}))
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
