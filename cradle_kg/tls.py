"""One TLS context per process, shared by the HTTP clients the runtime and its packs make.

httpx builds a new :class:`ssl.SSLContext` for every client it makes (``httpx.Client()``,
and each ``httpx.get``) and loads the whole CA bundle into it: ~18 ms of CPU on this
project's 2-core machines, even for a plain-HTTP request to 127.0.0.1. A client made per
probe paid it per probe (55 times in one ``cradle-kg demo``: about a sixth of its CPU).

:func:`tls_context` makes the context once, on first use, with httpx's own defaults
(certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when set: the same certificates a
client made with ``trust_env=True`` would trust) and hands the same one to every caller —
pass it as ``verify=``. An :class:`ssl.SSLContext` may be shared between clients and
threads.

INVARIANT: nobody changes it after it is made — it is sealed: loading certificates or keys
into it, or setting any of its attributes, raises :class:`TypeError`. Every client of the
process trusts what it trusts, so a pack that loaded its own CA into it (the SDK hands it to
every pack) had the remote graph store, the model server and the MCP upstreams trust that
CA too (``tests/security/test_184``). A client that needs other trust makes its own context
(``ssl.create_default_context(cafile=…)``). httpx still sets the ALPN protocols of each
connection (``set_alpn_protocols``), as on any context it is given.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any, NoReturn


class _SealedContext(ssl.SSLContext):
    """An :class:`ssl.SSLContext` whose trust and settings are fixed once it is sealed."""

    _sealed = False

    def _refuse(self, what: str) -> NoReturn:
        raise TypeError(f"the process's shared TLS context is sealed: `{what}` would change "
                        "what every client of the process trusts; make a context of your "
                        "own (`ssl.create_default_context(cafile=...)`)")

    def __setattr__(self, name: str, value: Any) -> None:
        if self._sealed:
            self._refuse(name)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if self._sealed:
            self._refuse(name)
        super().__delattr__(name)

    def load_verify_locations(self, *args: Any, **kwargs: Any) -> None:
        if self._sealed:
            self._refuse("load_verify_locations")
        super().load_verify_locations(*args, **kwargs)

    def load_cert_chain(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("load_cert_chain")

    def load_default_certs(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("load_default_certs")

    def set_default_verify_paths(self) -> None:
        self._refuse("set_default_verify_paths")

    def set_ciphers(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("set_ciphers")

    def load_dh_params(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("load_dh_params")

    def set_ecdh_curve(self, *args: Any, **kwargs: Any) -> None:
        self._refuse("set_ecdh_curve")


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The process's shared client TLS context: verifies certificates and host names, and
    is sealed (see the module's docstring)."""
    import httpx  # here: a command that never makes a client does not import it

    ctx = httpx.create_ssl_context()
    # the same object, of a class of the same layout that refuses changes from now on
    ctx.__class__ = _SealedContext
    object.__setattr__(ctx, "_sealed", True)
    return ctx
