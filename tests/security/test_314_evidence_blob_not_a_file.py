"""A blob of the evidence store that is not a regular file.

Finding (the nineteenth round's review): the evidence store read a blob with
``Path.read_bytes``. In a home handed over (or edited by someone who may write it), a
blob's place holding a folder made ``evidence show`` print ``unexpected
IsADirectoryError``, and a FIFO there held it — and every other reader of that blob: a
proposal citing it, lineage reading a trusted input — for ever, nobody writing to it.

Now a blob is read by the runtime's one strict reader (``inputs.read_file``: opened without
blocking, a regular file only): one ``error:`` line naming the blob's file, exit 2.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cradle_kg import Runtime

from .inputcli import cli, fresh_home


def _blob(tmp_path: Path) -> tuple[Path, str, Path]:
    """A demo home holding one blob: the home, its address and its file."""
    home = fresh_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        ref = rt.add_evidence(b"the landlord's letter", kind="document",
                              collector="user:bob")
    digest = ref.removeprefix("sha256:")
    return home, ref, home / "evidence" / digest[:2] / digest[2:]


@pytest.mark.parametrize("planted", ["folder", "fifo"])
def test_a_blob_that_is_not_a_file_is_one_error_line(tmp_path: Path, planted: str) -> None:
    home, ref, blob = _blob(tmp_path)
    blob.unlink()
    if planted == "folder":
        blob.mkdir()
    else:
        os.mkfifo(blob)
    done = cli("evidence", "show", ref, "--home", str(home), timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines and lines[0].startswith("error:"), done.stderr
    assert "not a regular file" in done.stderr and "unexpected" not in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_blob_is_still_named(tmp_path: Path) -> None:
    home, ref, blob = _blob(tmp_path)
    shutil.move(blob, tmp_path / "away")
    done = cli("evidence", "show", ref, "--home", str(home), timeout=60)
    assert done.returncode == 2 and f"no evidence `{ref}`" in done.stderr, done.stderr
