"""A pack installed as a distribution (an entry point of ``cradle_kg.packs``) is found.

Listing entry points reads every installed distribution's metadata (~15 ms at each
runtime's start), so the listing is kept until a folder of ``sys.path`` changes: a pack
installed while the process runs (a new ``*.dist-info`` in such a folder) is found by the
next discovery, and one removed is gone from it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cradle_kg.errors import ManifestError
from cradle_kg.packs.registry import BUILTIN_PACKS, PackRegistry


def install(site: Path, dist: str, module: str, body: str) -> None:
    """A distribution in ``site`` whose entry point ``module:folder`` returns a pack."""
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[cradle_kg.packs]\n{dist} = {module}:folder\n")
    (site / f"{module}.py").write_text(body)


def pack_copy(tmp_path: Path, version: str) -> Path:
    """``demo.ledger`` at another version (a pack folder outside the built-in ones)."""
    folder = tmp_path / f"ledger-{version}"
    shutil.copytree(BUILTIN_PACKS / "demo.ledger", folder,
                    ignore=shutil.ignore_patterns("__pycache__", "tests"))
    manifest = folder / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("version: 1.0.0", f"version: {version}"))
    return folder


def test_a_pack_installed_while_the_process_runs_is_found_and_one_removed_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    before = set(PackRegistry.discover().packs)
    assert "demo.ledger@9.9.9" not in before
    folder = pack_copy(tmp_path, "9.9.9")
    install(site, "ledger_pack", "ledger_pack_entry",
            f"def folder():\n    return {str(folder)!r}\n")
    assert set(PackRegistry.discover().packs) == before | {"demo.ledger@9.9.9"}
    assert PackRegistry.discover().get("demo.ledger").version == "9.9.9"  # the newest
    shutil.rmtree(site / "ledger_pack-1.0.dist-info")
    assert set(PackRegistry.discover().packs) == before


def test_an_entry_point_that_fails_names_itself(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    install(site, "broken_pack", "broken_pack_entry",
            "def folder():\n    raise RuntimeError('no folder here')\n")
    with pytest.raises(ManifestError, match=r"entry point `broken_pack`.*no folder here"):
        PackRegistry.discover()
