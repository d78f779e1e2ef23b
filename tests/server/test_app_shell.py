"""The server process answers ``/healthz`` without the app, and builds the app (FastAPI, the
runtime) only on the first request that needs it (issue 17, target 3: memory and start-up).

A real ``cradle-kg serve`` runs in a fresh interpreter whose ``uvicorn.run`` drives the ASGI
app it is given in-process (the workers are real): what the process has imported can then
be read from its ``sys.modules`` between requests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import free_port, make_demo_home

#: what a query-only server must not import: the app's framework, the runtime and its
#: policy engine, and the query command's graph tooling
APP_MODULES = ("fastapi", "starlette", "cedarpy", "rdflib", "pyshacl", "owlready2")

PROBE = r"""
import asyncio, json, shutil, sys
from pathlib import Path
import uvicorn

HOME = Path(sys.argv[1])
report = {}

def heavy():
    return sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in %(roots)r}
                  | ({'cradle_kg.loop.runtime'} & set(sys.modules)))

async def call(app, path, method="GET", headers=()):
    sent = []
    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}
    async def send(message):
        sent.append(message)
    await app({"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
               "method": method, "path": path, "raw_path": path.encode(), "root_path": "",
               "query_string": b"", "headers": [(b"host", b"x"), *headers],
               "scheme": "http", "server": ("x", 80), "client": ("127.0.0.1", 1)},
              receive, send)
    head = sent[0]
    return (head["status"], {k.decode(): v.decode() for k, v in head["headers"]},
            b"".join(m.get("body", b"") for m in sent[1:]))

async def drive(app):
    life = asyncio.Queue()
    out = asyncio.Queue()
    task = asyncio.create_task(app({"type": "lifespan"}, life.get, out.put))
    await life.put({"type": "lifespan.startup"})
    report["startup"] = (await out.get())["type"]
    status, headers, body = await call(app, "/healthz", headers=[(b"origin", b"https://o.example")])
    report["health"] = [status, json.loads(body), headers.get("access-control-allow-origin"),
                        headers.get("x-content-type-options")]
    report["after_health"] = heavy()
    status, _, body = await call(app, "/api/runs")
    report["broken"] = [status, body.decode()]
    report["after_broken"] = heavy()
    shutil.move(str(HOME / "policies" / "broken.cedar"), str(HOME / "broken.cedar.off"))
    status, _, body = await call(app, "/api/runs")
    report["api"] = status
    status, _, body = await call(app, "/queries")
    report["queries"] = [status, len(json.loads(body))]
    report["after_api"] = heavy()
    workdir = app.front.workdir
    processes = [s.process for s in app.front._slots if s is not None]
    await life.put({"type": "lifespan.shutdown"})
    report["shutdown"] = (await out.get())["type"]
    await task
    report["workdir_left"] = workdir.exists()
    report["workers_alive"] = [p.is_alive() for p in processes]

def fake_run(app, **kwargs):
    asyncio.run(drive(app))

uvicorn.run = fake_run
sys.argv = ["cradle-kg", "serve", "--home", str(HOME), "--port", sys.argv[2], "--workers", "1",
            "--cors-origin", "*"]
from cradle_kg.cli import main
try:
    main()
except SystemExit:
    pass
print("REPORT " + json.dumps(report), file=sys.stderr)
"""


@pytest.mark.slow
def test_the_server_answers_healthz_without_the_app_and_builds_it_on_first_need(
        tmp_path: Path) -> None:
    home = make_demo_home(tmp_path / "home").path
    # a broken policy: the runtime cannot open (snapshotting the graph does not need it)
    (home / "policies" / "broken.cedar").write_text("permit(principal, action, resource\n")
    done = subprocess.run([sys.executable, "-c", PROBE % {"roots": APP_MODULES}, str(home),
                           str(free_port())], capture_output=True, text=True, timeout=180)
    lines = [x for x in done.stderr.splitlines() if x.startswith("REPORT ")]
    assert lines, done.stderr[-2000:]
    report = json.loads(lines[-1][len("REPORT "):])
    assert report["startup"] == "lifespan.startup.complete"
    status, health, cors, nosniff = report["health"]
    assert status == 200 and cors == "*" and nosniff == "nosniff"
    assert health["mode"] == "home" and health["workers"] == 1
    assert {"workers_ready", "triples", "workers_replaced", "network_sandboxed"} <= set(health)
    # /healthz answered, and nothing of the app, the runtime or the graph tooling imported
    assert report["after_health"] == [], report
    # a runtime that cannot be opened: 503 with the reason, and the next request tries again
    status, text = report["broken"]
    assert status == 503 and text.startswith("the runtime could not be opened"), text
    assert report["api"] == 401  # the app is built now: /api asks for a token
    assert report["queries"][0] == 200 and report["queries"][1] > 0
    assert {"fastapi", "cradle_kg.loop.runtime"} <= set(report["after_api"])
    # the shell owns the lifespan: the workers stop, the private folder goes
    assert report["shutdown"] == "lifespan.shutdown.complete"
    assert report["workdir_left"] is False and report["workers_alive"] == [False]
