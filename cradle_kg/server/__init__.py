"""The server: a SPARQL 1.1 endpoint, named queries, the runtime's JSON API, a web page.

    launch.py       ServerSettings, start_front: the store and the workers, no framework
    shell.py        AppShell: the server process's answer to what the workers pass on
                    (/healthz at once; the app below built on the first request needing it)
    app.py          create_app(settings, front, runtime): wires everything below
    supervisor.py   the listening socket, the query workers, the watchdog
    front.py        a query worker: answers /sparql on the server's port, passes the rest on
    plan.py         what a /sparql request asks (no web framework)
    protocol.py     /sparql — the route the OpenAPI page documents
    negotiation.py  which serialization a client gets
    worker.py       one query run + serialized in one place
    dataset.py      what workers read: checkpoints of the server's private store
    api.py          /api — submit, approvals, runs (bearer tokens, see auth.py)
    auth.py         per-identity tokens (approvers in config.json, agents in api-tokens.json)
    threads.py      the worker threads one identity's blocking calls run on (API, MCP gateway)
    readers.py      who may read the graph (--graph-readers), checked in the workers
    config_check.py the runtime's verdict on a config.json, asked by readers.py
    static/         the web page (vanilla HTML/JS/CSS, no CDN)
"""

from typing import Any

__all__ = ["STATIC_DIR", "AppShell", "ServerSettings", "create_app", "start_front"]


def __getattr__(name: str) -> Any:
    # on first use: a query worker imports ``server.worker`` and must not pay for FastAPI
    # and the runtime that ``app`` brings (3 s of imports per worker on a loaded machine)
    if name in ("ServerSettings", "start_front"):  # no FastAPI: the workers start first
        from . import launch

        return getattr(launch, name)
    if name == "AppShell":  # no FastAPI either: the app is built on first need
        from . import shell

        return shell.AppShell
    if name in __all__:
        from . import app

        return getattr(app, name)
    raise AttributeError(name)
