"""A live server's private folder is not removed by a server that cannot see its pid.

Finding (eleventh attack review): ``serve`` removes the private folders of servers that are
gone (``cradle-serve-*`` in the temp dir, each a full copy of the graph), judging a
server gone when no process has the pid its folder names (``owner.pid``). A pid names a
process only within a pid namespace: two servers of one user sharing a temp dir from two
namespaces (two containers of a pod sharing a volume as ``/tmp``, a systemd service with
its own ``PrivatePIDs``, ``unshare``) do not see each other's processes, so the second to
start took the first — alive and serving — for dead and removed its folder: its store,
its generations and its app's socket; its query workers could no longer open a generation,
and every query was a 500 ("cannot open the graph store").

Now a server holds an exclusive ``flock`` on its ``owner.pid`` for its life (the kernel
drops it when the process ends, SIGKILL included), and a folder is removed only when its
pid names no process *and* its lock can be taken — held while it is removed. A killed
server's folder is removed by the next ``serve`` as before.

Real servers, a real second pid namespace (``unshare --pid --fork``; skipped where the
machine allows none).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from cradle_kg.server.launch import OWNER_FILE, WORKDIR_PREFIX, remove_abandoned
from tests import oneshot

from ..server.conftest import start_server

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ("import sys; from pathlib import Path; "
         "from cradle_kg.server.launch import remove_abandoned; "
         "print(len(remove_abandoned(Path(sys.argv[1]))))")


def _other_pid_space(tmp: Path) -> subprocess.CompletedProcess[str]:
    """``remove_abandoned(tmp)`` run by a process of another pid namespace (where the
    server's pid names no process), as a second server's start there runs it."""
    return subprocess.run(["unshare", "--pid", "--fork", sys.executable, "-c", SWEEP, str(tmp)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def _namespaces() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True,
                           timeout=30)
    return probe.returncode == 0


def test_a_server_in_another_pid_space_keeps_its_folder(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    if not _namespaces():
        pytest.skip("no second pid namespace on this machine (`unshare --pid`)")
    # the servers' temp dir: short (the app's socket path is at most 107 bytes) and ours
    tmp = Path(tempfile.mkdtemp(prefix="cks-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(tmp))
    data = tmp_path / "g.ttl"
    data.write_text("<urn:a> <urn:b> <urn:c> .\n", encoding="utf-8")
    try:
        srv = start_server([str(data)], tmp_path / "serve.log")
        try:
            [folder] = list(tmp.glob(WORKDIR_PREFIX + "*"))
            assert (folder / OWNER_FILE).read_text().strip() == str(srv.process.pid)
            swept = _other_pid_space(tmp)
            assert swept.returncode == 0, swept.stderr
            # before: `1` — the live server's folder removed, its socket with it
            assert swept.stdout.strip() == "0", swept.stdout
            assert folder.is_dir() and (folder / "app.sock").exists()
            assert oneshot.get(srv.url + "/healthz", timeout=30).status_code == 200
            assert oneshot.post(srv.sparql, data={"query": "ASK { <urn:a> ?p ?o }"},
                              headers={"Accept": "application/sparql-results+json"},
                              timeout=30).json()["boolean"] is True
        finally:
            srv.process.send_signal(signal.SIGKILL)  # gone: its lock with it
            srv.process.wait(10)
        assert folder.is_dir()
        assert remove_abandoned(tmp) == [folder]  # a killed server's folder, as before
        assert not folder.exists()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
