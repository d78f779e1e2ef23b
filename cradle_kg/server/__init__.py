"""The server: a SPARQL 1.1 endpoint, named queries, the runtime's JSON API, a web page.

    app.py          create_app(ServerSettings): wires everything below
    protocol.py     /sparql — SPARQL 1.1 Protocol + Service Description (read-only)
    negotiation.py  which serialization a client gets
    worker.py       query worker processes: run + serialize in one place, killable
    dataset.py      what workers read: an N-Quads snapshot, then the journal
    api.py          /api — submit, approvals, runs (bearer tokens, see auth.py)
    auth.py         per-identity tokens (approvers in config.json, agents in api-tokens.json)
    static/         the web page (vanilla HTML/JS/CSS, no CDN)
"""

from .app import STATIC_DIR, ServerSettings, create_app

__all__ = ["STATIC_DIR", "ServerSettings", "create_app"]
