"""A throw-away ``oxigraph serve`` for tests and benches: a free port of 127.0.0.1, a temp
dir for its data, ready when it answers a query, stopped (and its directory removed) on
:meth:`ScratchOxigraph.stop`.

The ``oxigraph`` command comes from the PyPI package ``oxigraph`` (in the ``dev`` extra);
``OXIGRAPH_BIN`` overrides where it is. A missing binary raises
:class:`OxigraphUnavailable` with the command that installs it — never a silent skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from ..errors import GraphStoreError
from ..tls import tls_context
from .graph_config import GraphEndpoints, from_base


class OxigraphUnavailable(GraphStoreError):
    """No ``oxigraph`` command on this machine."""


def oxigraph_bin() -> Path:
    env = os.environ.get("OXIGRAPH_BIN")
    beside = Path(sys.executable).parent / "oxigraph"  # the virtualenv's own
    found = shutil.which("oxigraph")
    for candidate in (Path(env) if env else None, beside, Path(found) if found else None):
        if candidate is not None and candidate.is_file():
            return candidate
    raise OxigraphUnavailable("no `oxigraph` command on this machine",
                              hint="`pip install oxigraph` (the `dev` extra has it), or set "
                                   "`OXIGRAPH_BIN`")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ScratchOxigraph:
    """One ``oxigraph serve``, for the life of a test session or a bench."""

    def __init__(self, *, timeout: float = 30.0, port: int | None = None) -> None:
        self.bin = oxigraph_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="cradle-oxigraph-"))
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = (self.dir / "server.log").open("wb")
        self._proc = subprocess.Popen(
            [str(self.bin), "serve", "--location", str(self.dir / "data"),
             "--bind", f"127.0.0.1:{self.port}"],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            self._wait(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                log = (self.dir / "server.log").read_text(errors="replace")[-500:]
                raise OxigraphUnavailable(f"`oxigraph serve` exited with code "
                                          f"{self._proc.returncode}: {log}")
            try:
                r = httpx.post(f"{self.url}/query", data={"query": "ASK {}"}, timeout=2,
                               verify=tls_context(), trust_env=False,
                               headers={"Accept": "application/sparql-results+json"})
                if r.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise OxigraphUnavailable(f"`oxigraph serve` did not answer within {timeout:g} s")

    def endpoints(self) -> GraphEndpoints:
        return from_base(self.url)

    def setting(self) -> str:
        """The ``CRADLE_GRAPH_URL`` value naming this server (its base URL)."""
        return self.url

    def clear(self) -> None:
        """Empty the dataset (a fresh one for the next test)."""
        r = httpx.post(f"{self.url}/update", content=b"CLEAR ALL",
                       headers={"Content-Type": "application/sparql-update"}, timeout=30,
                       verify=tls_context(), trust_env=False)
        r.raise_for_status()

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ScratchOxigraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["OxigraphUnavailable", "ScratchOxigraph", "free_port", "oxigraph_bin"]
