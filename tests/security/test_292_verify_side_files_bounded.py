"""Attack review (a journal handed to an auditor): the files beside the journal.

``audit verify`` never writes next to the journal: a ``-wal`` left without its ``-shm``
is recovered from a private copy in the temporary folder. The copy took whatever the
folder held under that name: a ``journal.sqlite-wal`` that is a link to ``/dev/zero``
was copied until the auditor's disk was full, and a sparse one (a terabyte of holes,
a few bytes on the author's disk and in a tar archive) as far as the disk would go. Now a
``-wal`` or ``-shm`` that is not a regular file is reported broken, and a copy the
temporary folder has no room for is refused before a byte is written; the rest is
verified as before.

Each case runs verify in a child process whose file size limit (``RLIMIT_FSIZE``) is
64 MiB, so that before the fix the copy stopped there (``File too large``) instead of
filling the disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.security.handed import author, handed_home

pytestmark = pytest.mark.sqlite_only("the SQLite file's WAL")

_CHILD = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
from cradle_kg.storage import verify_journal
report = verify_journal(Path(sys.argv[1]))
print(json.dumps({"intact": report.intact, "reason": report.reason}))
"""


def _verify_bounded(journal: Path, tmp: Path) -> dict[str, object]:
    tmp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(journal)], env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    out: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return out


@pytest.fixture(scope="module")
def handed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = handed_home(tmp_path_factory, "t292")
    author(home / "journal.sqlite").close()  # the journal alone, out of WAL
    return home / "journal.sqlite"


def _beside(handed: Path, folder: Path) -> Path:
    folder.mkdir()
    journal = folder / "journal.sqlite"
    shutil.copyfile(handed, journal)
    return journal


@pytest.mark.parametrize("link", ["/dev/zero", "/dev/urandom"])
def test_a_wal_that_is_a_device_is_broken_and_never_copied(
        handed: Path, tmp_path: Path, link: str) -> None:
    journal = _beside(handed, tmp_path / "home")
    Path(f"{journal}-wal").symlink_to(link)
    out = _verify_bounded(journal, tmp_path / "tmp")
    assert out["intact"] is False
    assert "not a regular file" in str(out["reason"]), out
    assert "journal.sqlite-wal" in str(out["reason"])
    assert not any((tmp_path / "tmp").iterdir())


def test_a_shm_that_is_a_link_is_broken(handed: Path, tmp_path: Path) -> None:
    journal = _beside(handed, tmp_path / "home")
    Path(f"{journal}-wal").write_bytes(b"")
    Path(f"{journal}-shm").symlink_to("/dev/zero")
    out = _verify_bounded(journal, tmp_path / "tmp")
    assert out["intact"] is False
    assert "not a regular file" in str(out["reason"]), out


def test_a_sparse_wal_larger_than_the_free_space_is_refused(
        handed: Path, tmp_path: Path) -> None:
    journal = _beside(handed, tmp_path / "home")
    free = shutil.disk_usage(tmp_path).free
    with open(f"{journal}-wal", "wb") as wal:  # holes: nothing written on this disk
        wal.truncate(free + (1 << 30))
    out = _verify_bounded(journal, tmp_path / "tmp")
    assert out["intact"] is False
    assert "no room" in str(out["reason"]), out
    assert not any((tmp_path / "tmp").iterdir())


def test_a_wal_without_its_shm_is_still_recovered(handed: Path, tmp_path: Path) -> None:
    """The copy is kept for what it is for: a crashed writer's WAL, read in full."""
    (tmp_path / "live").mkdir()
    live = tmp_path / "live" / "journal.sqlite"
    shutil.copyfile(handed, live)
    conn = author(live)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("REINDEX events_run")  # a commit in the WAL, not yet in the file
    journal = tmp_path / "home" / "journal.sqlite"
    journal.parent.mkdir()
    shutil.copyfile(live, journal)
    shutil.copyfile(f"{live}-wal", f"{journal}-wal")  # as a crash leaves it: no -shm
    conn.close()
    assert Path(f"{journal}-wal").stat().st_size > 0
    out = _verify_bounded(journal, tmp_path / "tmp")
    assert out["intact"] is True, out
