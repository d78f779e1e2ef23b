"""A manifest PyYAML's reader refuses (a NUL byte, a control character) is one line.

Finding (malformed files at every door): ``read_manifest`` quoted PyYAML's ``problem`` —
or, when the error has none (a ``ReaderError``: a NUL byte or another control character
in the file), the whole exception text, which is several lines (``in "<unicode string>",
position 79``). ``pack validate`` listed a two-line error and every command opening a home
that lists the pack printed an ``error:`` of two lines. It is now one line naming the
file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.errors import ManifestError
from cradle_kg.packs.manifest import read_manifest

from .homes import credit, without_journal_url
from .inputcli import assert_refused, cli
from .malformed import PACK_MANIFEST, home_with_pack


@pytest.mark.parametrize("junk", ["\x00", "\x07", "\x1b"])
def test_a_control_character_is_one_line(tmp_path: Path, junk: str) -> None:
    _, folder = home_with_pack(tmp_path / "home")
    (folder / "manifest.yaml").write_text(PACK_MANIFEST.replace("Small", "Sm" + junk),
                                          encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        read_manifest(folder)
    assert "\n" not in caught.value.message, caught.value.message
    assert "manifest.yaml" in caught.value.message


def test_the_cli_says_it_in_one_line(tmp_path: Path) -> None:
    home, folder = home_with_pack(tmp_path / "home")
    (folder / "manifest.yaml").write_text(PACK_MANIFEST.replace("Small", "Sm\x00"),
                                          encoding="utf-8")
    proposal = tmp_path / "credit.json"
    proposal.write_text(json.dumps(credit("p-1")), encoding="utf-8")
    done = cli("submit", str(proposal), "--home", str(home), env=without_journal_url())
    assert_refused(done, "manifest.yaml")
