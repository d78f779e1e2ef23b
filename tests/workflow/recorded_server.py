"""A tiny OpenAI-compatible HTTP server that REPLAYS RECORDED RESPONSES — not a model.

It listens on 127.0.0.1 (an ephemeral port), answers ``POST /v1/chat/completions`` with
the next recorded completion body, and keeps every request body it received so a test
can check what the client really sent.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RecordedChatServer:
    def __init__(self, bodies: list[dict[str, Any]], *, status: int = 200,
                 gzipped: bool = False) -> None:
        self.bodies = list(bodies)
        self.status = status
        #: answer with the body gzip-compressed (``Content-Encoding: gzip``), asked or not
        self.gzipped = gzipped
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []

    @contextmanager
    def running(self) -> Iterator[str]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                server.requests.append(json.loads(self.rfile.read(length)))
                server.paths.append(self.path)
                body = server.bodies.pop(0) if server.bodies else {"error": "no recording"}
                data = json.dumps(body).encode()
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                if server.gzipped:
                    data = gzip.compress(data)
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        finally:
            httpd.shutdown()
            httpd.server_close()
            thread.join(timeout=5)


def completion(content: str, *, model: str = "qwen2.5-0.5b-instruct") -> dict[str, Any]:
    """An OpenAI chat.completion body (the wire format vLLM, Ollama and llama.cpp answer)."""
    return {"id": "chatcmpl-recorded", "object": "chat.completion", "created": 1767225600,
            "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 70, "completion_tokens": 20, "total_tokens": 90}}
