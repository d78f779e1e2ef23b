"""A throw-away PostgreSQL server for tests and benches: ``initdb`` into a temp dir, on a
free port of 127.0.0.1, stopped (and its directory removed) on :meth:`ScratchPostgres.stop`.

It uses the machine's PostgreSQL binaries (Debian's ``postgresql`` package puts them in
``/usr/lib/postgresql/<major>/bin``; ``PG_BIN`` overrides). Missing binaries raise
:class:`PostgresUnavailable` with the command that installs them — never a silent skip.
Durability settings are relaxed (``fsync=off``): the server is thrown away after the run,
and what the tests check (chains, claims, locks, crash recovery of *workers*) does not
depend on the server surviving a power cut.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from ..errors import JournalError


class PostgresUnavailable(JournalError):
    """No PostgreSQL server binaries on this machine."""


def pg_bin() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``."""
    env = os.environ.get("PG_BIN")
    candidates = [Path(env)] if env else sorted(
        Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name)
        if p.parent.name.isdigit() else 0, reverse=True)
    found = shutil.which("initdb")
    if found and not env:
        candidates.append(Path(found).parent)
    for c in candidates:
        if (c / "initdb").is_file() and (c / "pg_ctl").is_file():
            return c
    raise PostgresUnavailable(
        "no PostgreSQL server binaries (`initdb`, `pg_ctl`) on this machine",
        hint="as root: `apt-get install -y postgresql` (./dev test does it), or set `PG_BIN`")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ScratchPostgres:
    """One server, for the life of a test session or a bench."""

    def __init__(self, *, durable: bool = False) -> None:
        """``durable``: the server flushes its WAL to disk (``fsync=on``, as a deployment
        runs it) — for benches of what a commit costs; the tests' server does not."""
        self.bin = pg_bin()
        self.dir = Path(tempfile.mkdtemp(prefix="cradle-pg-"))
        self.port = _free_port()
        self.user = "cradle"
        data = self.dir / "data"
        env = {**os.environ, "LC_ALL": "C"}
        run_as = self._run_as()
        if run_as:  # initdb refuses root: the data directory belongs to `postgres`
            shutil.chown(self.dir, user=run_as)
        self._prefix = ["runuser", "-u", run_as, "--"] if run_as else []
        self._run([str(self.bin / "initdb"), "-D", str(data), "-U", self.user,
                   "--auth=trust", "--encoding=UTF8", "--locale=C", "-N"], env)
        sync = "on" if durable else "off"
        opts = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c fsync={sync} "
                f"-c synchronous_commit=on -c full_page_writes={sync} -c max_connections=200 "
                f"-c unix_socket_directories={self.dir} -c shared_buffers=64MB")
        self._run([str(self.bin / "pg_ctl"), "-D", str(data), "-o", opts, "-w", "-t", "60",
                   "-l", str(self.dir / "server.log"), "start"], env)
        self._data = data
        self._env = env

    @staticmethod
    def _run_as() -> str | None:
        if os.geteuid() != 0:
            return None
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError as exc:
            raise PostgresUnavailable("running as root with no `postgres` user to run "
                                      "the server as") from exc
        return "postgres"

    def _run(self, cmd: list[str], env: dict[str, str]) -> None:
        done = subprocess.run([*self._prefix, *cmd], env=env, capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            log = self.dir / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise PostgresUnavailable(f"`{Path(cmd[0]).name}` failed: "
                                      f"{(done.stderr or done.stdout)[-2000:]}{tail}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, *, template: str | None = None) -> str:
        """A new empty database (a copy of ``template`` if given); its URL."""
        import psycopg

        name = "j_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"'
                         + (f' TEMPLATE "{template}"' if template else ""))
        return self.url(name)

    def create_schema(self, database: str = "postgres") -> str:
        """A new empty schema in ``database``; a URL whose ``search_path`` is that schema
        (much cheaper than a database per test: a journal lives in one schema)."""
        import psycopg

        name = "j_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return f"{self.url(database)}?options=-csearch_path%3D{name}"

    def journal_schema(self, database: str = "postgres") -> str:
        """:meth:`create_schema` with the journal's migrations applied: the URL of a fresh,
        empty journal (what a test's or a bench's PostgreSQL journal starts from)."""
        from .pg_admin import migrate

        url = self.create_schema(database)
        migrate(url)
        return url

    def drop_database(self, url: str) -> None:
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def cpu_seconds(self) -> float:
        """CPU used by the server so far: the postmaster and every backend it has reaped
        (a live connection's backend counts once it ends)."""
        pid = int((self._data / "postmaster.pid").read_text().split()[0])
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        try:
            subprocess.run([*self._prefix, str(self.bin / "pg_ctl"), "-D", str(self._data),
                            "-m", "immediate", "-w", "stop"], env=self._env,
                           capture_output=True, check=False)
        finally:
            # the server's last processes may still write while they exit (an immediate
            # stop): a pass that met a file appearing leaves the folder; a few more, then
            # give up (left in the temp dir, never an error at the end of a session)
            for _ in range(50):
                shutil.rmtree(self.dir, ignore_errors=True)
                if not self.dir.exists():
                    break
                time.sleep(0.1)


__all__ = ["PostgresUnavailable", "ScratchPostgres", "pg_bin"]
