"""A server's private folder (its copy of the graph, ~0.5 GB at 1.4 M quads) outlives a
server that was killed (SIGKILL, a crash): the next ``serve`` of the same user removes the
folders whose owner is gone, and no other."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg.server.launch import OWNER_FILE, WORKDIR_PREFIX, remove_abandoned
from tests import oneshot

from .conftest import start_server, stop_server

#: a module whose set-up is long (servers): run first
pytestmark = pytest.mark.slow


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _folder(tmp: Path, name: str, owner: str | None) -> Path:
    folder = tmp / (WORKDIR_PREFIX + name)
    (folder / "store").mkdir(parents=True)
    if owner is not None:
        (folder / OWNER_FILE).write_text(owner, encoding="ascii")
    return folder


def test_only_the_folders_of_servers_that_are_gone_are_removed(tmp_path: Path) -> None:
    dead = _folder(tmp_path, "dead", f"{_dead_pid()}\n")
    alive = _folder(tmp_path, "alive", f"{os.getppid()}\n")
    mine = _folder(tmp_path, "mine", f"{os.getpid()}\n")
    starting = _folder(tmp_path, "starting", None)  # no pid yet, or an older cradle-kg
    garbled = _folder(tmp_path, "garbled", "not a pid")
    other = tmp_path / "cradle-other-x"
    other.mkdir()
    (other / OWNER_FILE).write_text(f"{_dead_pid()}\n", encoding="ascii")
    link = tmp_path / (WORKDIR_PREFIX + "link")
    link.symlink_to(dead)
    assert remove_abandoned(tmp_path) == [dead]
    assert not dead.exists()
    for kept in (alive, mine, starting, garbled, other):
        assert kept.is_dir(), kept
    assert link.is_symlink()  # a link is never followed, nor removed


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A temp dir of the servers' own with a short path: the app's Unix socket lives in the
    private folder, and a socket's path is at most 107 bytes (a pytest worker's tmp_path
    with this test's name is longer)."""
    folder = Path(tempfile.mkdtemp(prefix="cks-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_next_server_removes_a_killed_servers_folder(tmp_path: Path, short_tmp: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = short_tmp
    monkeypatch.setenv("TMPDIR", str(tmp))  # the servers' temp dir: this test's own
    data = tmp_path / "g.ttl"
    data.write_text("<urn:a> <urn:b> <urn:c> .\n", encoding="utf-8")
    first = start_server([str(data)], tmp_path / "first.log")
    try:
        [folder] = list(tmp.glob(WORKDIR_PREFIX + "*"))
        assert (folder / OWNER_FILE).read_text().strip() == str(first.process.pid)
    finally:
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(10)
    assert folder.is_dir()  # killed: nothing removed it
    second = start_server([str(data)], tmp_path / "second.log")
    try:
        assert not folder.exists()
        [own] = list(tmp.glob(WORKDIR_PREFIX + "*"))
        assert (own / OWNER_FILE).read_text().strip() == str(second.process.pid)
        assert oneshot.post(second.sparql, data={"query": "ASK { <urn:a> ?p ?o }"},
                          headers={"Accept": "application/sparql-results+json"}
                          ).json()["boolean"] is True
    finally:
        stop_server(second)
    assert not list(tmp.glob(WORKDIR_PREFIX + "*"))  # stopped: its own removed
