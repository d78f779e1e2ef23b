"""Finding (twenty-sixth review, the round's own changes): a pack's digest
(``packs/loader.pack_digest``, what each decision records and strict replay compares,
``test_555``) hashed one line per file, ``<path>\\0<what>\\n``, joined — but a file's name
and a link's text may hold a newline, so the lines did not frame them: a link ``L`` to
``abc`` and a file named ``M\\nRULES`` gave the same bytes as a link ``L`` to
``abc\\nM`` and a file ``RULES``. Two different pack folders had one digest: a pack
edited in place after it decided — a file renamed, a link retargeted — and ``replay
--strict`` said it reproduced the run with the pack's files as they are now
(``DID NOT RAISE``), as it did for ``test_555``'s edit before the digest existed.

Now a name's and a link's newline and backslash are written escaped (``\\n``, ``\\\\``), so
each file is one line and the digest input is read back one way; a pack without them (every
shipped pack) keeps its digest.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.packs.loader import pack_digest
from cradle_kg.workflow.replay import strict_replay
from tests.security.pack_versions import OLD, old_folder, record_under_old

BEFORE, AFTER = "M\nRULES", "RULES"


def _recorded(folder: Path) -> None:
    """What the pack held when it decided: a link, and a file under a name with a newline."""
    os.symlink("abc", folder / "L")
    (folder / BEFORE).write_text("credits: deny\n", encoding="utf-8")


def _edited(folder: Path) -> None:
    """Other files: the link's target and the file's name changed (``RULES``, a file the
    pack could read)."""
    (folder / "L").unlink()
    os.symlink("abc\nM", folder / "L")
    shutil.move(folder / BEFORE, folder / AFTER)


def test_two_folders_have_two_digests(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        folder.mkdir()
        (folder / "manifest.yaml").write_text("id: x\n", encoding="utf-8")
    _recorded(one)
    _recorded(two)
    _edited(two)
    assert sorted(p.name for p in one.iterdir()) != sorted(p.name for p in two.iterdir())
    # before: the same sha256 for both
    assert pack_digest(one) != pack_digest(two)


@pytest.mark.usefixtures("journal_backend")
def test_a_pack_edited_into_the_same_digest_is_refused(home: Path) -> None:
    old_folder(home).mkdir(parents=True)
    _recorded(old_folder(home))  # then the pack's own files (write_pack)
    run = record_under_old(home)
    assert strict_replay(home, [run]).runs == [run]  # untouched: reproduced
    _edited(old_folder(home))
    # before: DID NOT RAISE (the edited pack's digest was the recorded one)
    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(home, [run])
    assert f"`{OLD}`" in caught.value.message and "differ" in caught.value.message

