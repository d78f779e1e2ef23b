"""A throw-away Virtuoso Open Source server for tests and benches: a fresh database in a
temp dir, SQL and HTTP on free ports of 127.0.0.1, stopped (and its directory removed) by
:meth:`ScratchVirtuoso.stop`.

It runs the machine's ``virtuoso-t`` (Debian's ``virtuoso-opensource`` package;
``VIRTUOSO_BIN`` overrides) in the foreground with its own ``virtuoso.ini``, waits until
the HTTP server answers, then configures it through ``isql-vt`` (``VIRTUOSO_ISQL``
overrides) for a SPARQL 1.1 client:

* a SQL user (:attr:`ScratchVirtuoso.user`, a random password) with the
  ``SPARQL_UPDATE`` role;
* ``/sparql-auth`` and ``/sparql-graph-crud-auth`` switched from HTTP **digest** (the
  default) to **basic** authentication, so a client that speaks basic or bearer auth
  (all the remote store needs for any engine) reaches them. Over loopback, basic auth is
  as safe as digest; in production, put TLS in front (digest's only gain is on a clear
  channel). The anonymous ``/sparql`` stays read only: the ``SPARQL`` user is granted
  nothing, so a write there is refused.
* ``ResultSetMaxRows`` raised from Debian's 10,000 — Virtuoso truncates a result at that
  cap *silently* (no error, no header), which would cut an export short.

The dba password is changed to a random one too. Missing binaries raise
:class:`VirtuosoUnavailable` with the command that installs them — never a silent skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..errors import GraphStoreError
from ..tls import tls_context

#: the SPARQL 1.1 paths of a Virtuoso server (``/sparql-auth`` reads and writes)
QUERY_PATH = "/sparql-auth"
UPDATE_PATH = "/sparql-auth"
GRAPH_STORE_PATH = "/sparql-graph-crud-auth"
ANONYMOUS_QUERY_PATH = "/sparql"

_INI = """\
[Database]
DatabaseFile = {d}/virtuoso.db
ErrorLogFile = {d}/virtuoso.log
LockFile = {d}/virtuoso.lck
TransactionFile = {d}/virtuoso.trx
xa_persistent_file = {d}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
MaxCheckpointRemap = 2000
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {d}/virtuoso-temp.db
TransactionFile = {d}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{sql}
DisableUnixSocket = 1
DisableTcpSocket = 0
MaxClientConnections = 20
CheckpointInterval = 60
CaseMode = 2
DirsAllowed = {d}
NumberOfBuffers = {buffers}
MaxDirtyBuffers = {dirty}
ThreadsPerQuery = 2
AsyncQueueMaxThreads = 4
MaxQueryMem = 256M

[HTTPServer]
ServerPort = 127.0.0.1:{http}
ServerRoot = {d}
MaxClientConnections = 20
ServerThreads = 20
MaxKeepAlives = 20
KeepAliveTimeout = 10
Charset = UTF-8
EnabledGzipContent = 0

[SPARQL]
ResultSetMaxRows = {max_rows}
MaxQueryExecutionTime = 0
"""

_SETUP = """\
DB.DBA.VHOST_REMOVE (lpath=>'/sparql-auth');
DB.DBA.VHOST_DEFINE (lpath=>'/sparql-auth', ppath=>'/!sparql/', is_dav=>1, vsp_user=>'dba',
  auth_fn=>'DB.DBA.HP_AUTH_SPARQL_USER', realm=>'SPARQL', sec=>'basic',
  opts=>vector('noinherit', 1));
DB.DBA.VHOST_REMOVE (lpath=>'/sparql-graph-crud-auth');
DB.DBA.VHOST_DEFINE (lpath=>'/sparql-graph-crud-auth', ppath=>'/!sparql-graph-crud/',
  is_dav=>1, vsp_user=>'dba', auth_fn=>'DB.DBA.HP_AUTH_SPARQL_USER', realm=>'SPARQL',
  sec=>'basic', opts=>vector('noinherit', 1, 'exec_as_get', 1));
DB.DBA.USER_CREATE ('{user}', '{password}', vector ('DISABLED', 0));
GRANT SPARQL_UPDATE TO "{user}";
USER_SET_PASSWORD ('dba', '{dba}');
"""


class VirtuosoUnavailable(GraphStoreError):
    """No Virtuoso server binaries on this machine, or the server would not start."""


def _binary(env: str, names: tuple[str, ...], what: str) -> Path:
    given = os.environ.get(env)
    if given:
        if Path(given).is_file():
            return Path(given)
        raise VirtuosoUnavailable(f"`{env}` names `{given}`, which is not a file")
    for name in names:
        found = shutil.which(name)
        if found:
            return Path(found)
    raise VirtuosoUnavailable(
        f"no Virtuoso {what} (`{names[0]}`) on this machine",
        hint="as root: `apt-get install -y virtuoso-opensource` (./dev test does it), "
             f"or set `{env}`")


def virtuoso_bin() -> Path:
    """The ``virtuoso-t`` server binary."""
    return _binary("VIRTUOSO_BIN", ("virtuoso-t",), "server")


def isql_bin() -> Path:
    """The ``isql`` client that configures the server (Debian names it ``isql-vt``)."""
    return _binary("VIRTUOSO_ISQL", ("isql-vt", "isql-v"), "SQL client")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class SparqlEndpoints:
    """What a SPARQL 1.1 client needs: three URLs and the basic-auth credentials."""

    query: str
    update: str
    graph_store: str
    user: str
    password: str


class ScratchVirtuoso:
    """One server, for the life of a test session or a bench."""

    def __init__(self, *, buffers: int = 8000, max_rows: int = 10_000_000,
                 start_timeout: float = 90.0) -> None:
        self.bin = virtuoso_bin()
        self.isql = isql_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="cradle-virtuoso-"))
        self.user = "cradle"
        self.password = secrets.token_urlsafe(12)
        self._dba = secrets.token_urlsafe(12)
        self._proc: subprocess.Popen[bytes] | None = None
        self.system_graphs: frozenset[str] = frozenset()
        try:
            self._start(buffers, max_rows, start_timeout)
            self._configure()
            self._check()
        except BaseException:
            self.stop()
            raise

    # -- start -----------------------------------------------------------------------

    def _start(self, buffers: int, max_rows: int, timeout: float) -> None:
        self.sql_port, self.http_port = _free_port(), _free_port()
        ini = self.dir / "virtuoso.ini"
        ini.write_text(_INI.format(d=self.dir, sql=self.sql_port, http=self.http_port,
                                   buffers=buffers, dirty=buffers * 3 // 4,
                                   max_rows=max_rows))
        with (self.dir / "stdout.log").open("wb") as out:
            self._proc = subprocess.Popen(
                [str(self.bin), "+foreground", "+configfile", str(ini)], cwd=self.dir,
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        probe = f"{self.base_url}{ANONYMOUS_QUERY_PATH}"
        while True:
            if self._proc.poll() is not None:
                raise VirtuosoUnavailable(f"`virtuoso-t` exited with code "
                                          f"`{self._proc.returncode}`: {self._log_tail()}")
            try:
                answer = httpx.get(probe, params={"query": "ASK {}"}, timeout=2.0,
                                   verify=tls_context(), trust_env=False,
                                   headers={"Accept": "application/sparql-results+json"})
                if answer.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise VirtuosoUnavailable(f"`virtuoso-t` did not answer on "
                                          f"`{probe}` within {timeout:.0f} s: "
                                          f"{self._log_tail()}")
            time.sleep(0.2)

    def _configure(self) -> None:
        script = _SETUP.format(user=self.user, password=self.password, dba=self._dba)
        done = subprocess.run([str(self.isql), f"127.0.0.1:{self.sql_port}", "dba", "dba",
                               "VERBOSE=OFF", "BANNER=OFF", "PROMPT=OFF"],
                              input=script, capture_output=True, text=True, timeout=60,
                              check=False)
        if done.returncode != 0 or "*** Error" in done.stdout + done.stderr:
            raise VirtuosoUnavailable("configuring virtuoso failed: "
                                      f"{(done.stdout + done.stderr)[-2000:]}")

    def _check(self) -> None:
        """The configuration holds: basic auth is accepted and the user may update (a
        ``CLEAR SILENT`` of a graph that does not exist changes nothing)."""
        answer = httpx.post(self.endpoints.update, auth=(self.user, self.password),
                            data={"update": "CLEAR SILENT GRAPH <urn:x-cradle:probe>"},
                            verify=tls_context(), timeout=30.0, trust_env=False)
        if answer.status_code != 200:
            raise VirtuosoUnavailable(f"virtuoso refused the configured user: "
                                      f"`{answer.status_code}` {answer.text[:500]}")
        self.system_graphs = frozenset(self.graph_names())

    def graph_names(self) -> list[str]:
        """Every graph with a triple — Virtuoso's own included (its default graph is
        the union of them all)."""
        answer = httpx.post(self.endpoints.query, auth=(self.user, self.password),
                            data={"query": "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"},
                            headers={"Accept": "application/sparql-results+json"},
                            verify=tls_context(), timeout=60.0, trust_env=False)
        if answer.status_code != 200:
            raise VirtuosoUnavailable(f"virtuoso did not list its graphs: "
                                      f"`{answer.status_code}` {answer.text[:500]}")
        rows = answer.json()["results"]["bindings"]
        return sorted(r["g"]["value"] for r in rows if r["g"]["type"] == "uri")

    def clear(self) -> None:
        """Drop every graph but Virtuoso's own (``CLEAR ALL`` removes nothing here, and
        ``DROP GRAPH`` fails for a graph that was not created explicitly)."""
        extra = [g for g in self.graph_names() if g not in self.system_graphs]
        if not extra:
            return
        answer = httpx.post(self.endpoints.update, auth=(self.user, self.password),
                            data={"update": " ;\n".join(f"DROP SILENT GRAPH <{g}>"
                                                        for g in extra)}, timeout=120.0,
                            verify=tls_context(), trust_env=False)
        if answer.status_code != 200:
            raise VirtuosoUnavailable(f"virtuoso did not drop the graphs: "
                                      f"`{answer.status_code}` {answer.text[:500]}")

    def _log_tail(self) -> str:
        parts = []
        for name in ("virtuoso.log", "stdout.log"):
            log = self.dir / name
            if log.exists():
                parts.append(log.read_text(errors="replace")[-1500:])
        return "\n".join(parts)

    # -- what clients need -----------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def endpoints(self) -> SparqlEndpoints:
        b = self.base_url
        return SparqlEndpoints(query=b + QUERY_PATH, update=b + UPDATE_PATH,
                               graph_store=b + GRAPH_STORE_PATH, user=self.user,
                               password=self.password)

    def setting(self) -> str:
        """The ``CRADLE_GRAPH_URL`` value naming this server (its three URLs, the
        credentials as ``user:password@``)."""
        who = f"{self.user}:{self.password}@"
        base = self.base_url.replace("http://", "http://" + who)
        return (f"query={base}{QUERY_PATH} update={base}{UPDATE_PATH} "
                f"store={base}{GRAPH_STORE_PATH}")

    @property
    def anonymous_query_url(self) -> str:
        """``/sparql``: reads without credentials, refuses every write."""
        return self.base_url + ANONYMOUS_QUERY_PATH

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def cpu_seconds(self) -> float:
        """CPU used by the server so far (user + system)."""
        if self._proc is None:
            return 0.0
        fields = Path(f"/proc/{self._proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    # -- stop ------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 20 s) and remove its directory."""
        try:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait(timeout=20)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ScratchVirtuoso:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["ANONYMOUS_QUERY_PATH", "GRAPH_STORE_PATH", "QUERY_PATH", "UPDATE_PATH",
           "ScratchVirtuoso", "SparqlEndpoints", "VirtuosoUnavailable", "isql_bin",
           "virtuoso_bin"]
