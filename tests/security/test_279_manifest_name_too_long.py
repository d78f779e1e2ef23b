"""A manifest naming a file too long for the filesystem is an invalid pack, not a crash.

Finding (malformed files at every door): ``pack validate`` asked whether each file the
manifest names exists with ``Path.exists``, which raises ``OSError`` (``File name too
long``) for a name over the filesystem's 255 bytes: ``pack validate`` — the review of a
pack one does not trust yet — ended in ``error: unexpected OSError`` (exit 2) instead of
its report. It now reports the pack invalid, naming the manifest's line (exit 1).
"""

from __future__ import annotations

import json
from pathlib import Path

from cradle_kg.packs.validate import validate_pack

from .inputcli import cli
from .malformed import PACK_MANIFEST, home_with_pack


def _long_name(tmp_path: Path) -> Path:
    _, folder = home_with_pack(tmp_path / "home")
    (folder / "manifest.yaml").write_text(
        PACK_MANIFEST.replace("ontology: ontology.ttl", "ontology: " + "x" * 300),
        encoding="utf-8")
    return folder


def test_validate_reports_it(tmp_path: Path) -> None:
    report = validate_pack(_long_name(tmp_path), reasoner=False)
    assert not report.ok and any("manifest.yaml:6" in e for e in report.errors), report.errors


def test_the_cli_reports_the_pack_invalid(tmp_path: Path) -> None:
    done = cli("pack", "validate", str(_long_name(tmp_path)), "--no-reasoner", "--format",
               "json")
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "error: unexpected " not in done.stderr and "Traceback" not in done.stderr
    assert not json.loads(done.stdout)["ok"]
