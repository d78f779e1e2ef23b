"""One TLS context per process, shared by the HTTP clients the runtime and its packs make.

httpx builds a new :class:`ssl.SSLContext` for every client it makes (``httpx.Client()``,
and each ``httpx.get``) and loads the whole CA bundle into it: ~18 ms of CPU on this
project's 2-core machines, even for a plain-HTTP request to 127.0.0.1. A client made per
probe paid it per probe (55 times in one ``cradle-kg demo``: about a sixth of its CPU).

:func:`tls_context` makes the context once, on first use, with httpx's own defaults
(certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set: the same certificates a
client made with ``trust_env=True`` would trust) and hands the same one to every caller —
pass it as ``verify=``. An :class:`ssl.SSLContext` may be shared between clients and
threads; nobody changes it after it is made.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's shared client TLS context: verifies certificates and host names."""
    import httpx  # here: a command that never makes a client does not import it

    return httpx.create_ssl_context()
