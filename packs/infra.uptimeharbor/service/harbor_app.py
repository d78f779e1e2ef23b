"""UptimeHarbor: the tiny HTTP service the pack deploys, probes and rolls back.

This file is the *source* of ``app.py`` in the fixture git repository (see
``repo_fixture.py``); the service runs from a checkout of that repository, never from
the pack. Its behaviour comes from the files of the checkout: ``config.json`` (one
section per environment) and ``REVISION`` (filled by ``git archive`` through
``export-subst``, so the commit it reports comes from git, not from the deploy tool).

    GET /health  -> 200 {"status": "ok", ...} or 500 {"status": "error", "reason": ...}
    GET /        -> 200 a user-facing page, or 503 when the configuration is broken

Standard library only: the checkout has no virtualenv.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: the configuration key the service reads its database location from
DB_KEY = "db_url"

HERE = Path(__file__).resolve().parent


class ConfigError(Exception):
    """The configuration of this checkout cannot run the service."""


def revision() -> str:
    """The commit this checkout was built from (``unknown`` outside ``git archive``)."""
    try:
        text = (HERE / "REVISION").read_text(encoding="utf-8").strip()
    except OSError:
        return "unknown"
    return "unknown" if not text or text.startswith("$Format") else text


def load_settings(env: str) -> dict[str, Any]:
    """The settings of ``env``; raises ``ConfigError`` when they cannot run the service."""
    try:
        config = json.loads((HERE / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"config.json unreadable: {exc}") from exc
    section = config.get("environments", {}).get(env)
    if not isinstance(section, dict):
        raise ConfigError(f"no configuration for environment `{env}`")
    if not section.get(DB_KEY):
        raise ConfigError(f"missing `{DB_KEY}` for environment `{env}`")
    return {"greeting": config.get("greeting", "Welcome"), **section}


def render_page(greeting: str) -> str:
    """The user-facing page."""
    return (
        "<!doctype html><html><head><title>UptimeHarbor</title></head>"
        f"<body><h1>UptimeHarbor</h1><p>{greeting}</p></body></html>"
    )


def health(env: str) -> tuple[int, dict[str, Any]]:
    try:
        load_settings(env)
    except ConfigError as exc:
        return 500, {"status": "error", "commit": revision(), "env": env, "reason": str(exc)}
    return 200, {"status": "ok", "commit": revision(), "env": env}


def home_page(env: str) -> tuple[int, str]:
    try:
        settings = load_settings(env)
    except ConfigError:
        return 503, "<!doctype html><html><body><h1>UptimeHarbor is unavailable</h1></body></html>"
    return 200, render_page(str(settings["greeting"]))


class Handler(BaseHTTPRequestHandler):
    env = "staging"

    def do_GET(self) -> None:
        if self.path == "/health":
            status, body = health(self.env)
            self._send(status, "application/json", json.dumps(body))
        elif self.path == "/":
            status, page = home_page(self.env)
            self._send(status, "text/html; charset=utf-8", page)
        else:
            self._send(404, "application/json", json.dumps({"error": "not found"}))

    def _send(self, status: int, content_type: str, text: str) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"{self.address_string()} {format % args}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="UptimeHarbor service")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, default=None)
    parser.add_argument("--env", default=os.environ.get("UPTIMEHARBOR_ENV", "staging"))
    args = parser.parse_args(argv)
    Handler.env = args.env
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    if args.port_file is not None:
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(server.server_address[1]), encoding="utf-8")
        os.replace(tmp, args.port_file)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
