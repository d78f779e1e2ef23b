"""An upstream on streamable HTTP is read with the strict loader's rules, as on stdio.

Finding: ``test_99`` made the proxy read a stdio upstream's every line with the strict
loader (a key given twice, ``NaN``, a lone surrogate refused), but an upstream on
streamable HTTP was still parsed by the SDK, which reads a key given twice last-wins. An
upstream answering a read-only call with ``"structuredContent": {"ok": false, "ok": true}``
— as a JSON answer or as an event of an event stream — had the call reported ok and
executed with ``{"ok": true}`` journaled (checked on the code before the fix: the call's
result was ``{"ok": true}``, not an error). Now the transport that caps every answer
(:mod:`cradle_kg.integrations.upstream_http`) holds each JSON answer and each event whole
already; it reads them strictly and replaces one it refuses with the JSON-RPC error
answering its id: the call fails with the reason, journaled as a failed call, and the
session goes on.

A real ``cradle-kg mcp proxy --upstream URL`` subprocess in front of a real hostile server
(``http_upstream.py``) on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_43_upstream_http import Proxy, _reported_ok, upstream  # noqa: F401 (fixture)


@pytest.mark.slow
def test_an_http_answer_giving_a_key_twice_fails_the_call(home: Path, tmp_path: Path,
                                                          upstream: str) -> None:  # noqa: F811
    proxy = Proxy(home, tmp_path, upstream)
    try:
        for rid, tool in ((2, "twice"), (3, "twice_sse")):
            text = proxy.failed(rid, tool)
            assert "refused" in text and "duplicate key `ok`" in text, text
        proxy.fine(4)  # the session goes on
    finally:
        proxy.close(tmp_path)
    assert _reported_ok(home) == [False, False, True]
