"""httpx's one-shot calls (``httpx.get`` …) with the process's shared TLS context.

Each ``httpx.get`` / ``httpx.post`` makes a client, and each client builds an SSL context
and loads the CA bundle into it (~18 ms of CPU) — even for plain HTTP to 127.0.0.1: 150
of them in the endpoint, API and server-limit tests alone. These are the same calls
(a fresh connection each, no pooling between calls) with :func:`cradle_kg.tls.tls_context`,
and a timeout of 60 s unless the call names one: httpx's 5 s default failed a CI run at
load 10 (the first request to a server builds its app, `test_inbox_pager`).
"""

from __future__ import annotations

from typing import Any

import httpx

from cradle_kg.tls import tls_context

#: seconds a one-shot call waits (connect, read, write, pool) unless it names its own
TIMEOUT = 60.0


def get(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.get(url, verify=tls_context(), **{"timeout": TIMEOUT, **kwargs})


def post(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.post(url, verify=tls_context(), **{"timeout": TIMEOUT, **kwargs})


def options(url: str, **kwargs: Any) -> httpx.Response:
    return httpx.options(url, verify=tls_context(), **{"timeout": TIMEOUT, **kwargs})
