"""Where a home is: absolute, whichever way it was given (regression: a relative default
home broke a pack's services, which start in folders of their own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg.home import resolve_home


def test_home_is_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CRADLE_HOME", raising=False)
    assert resolve_home(None) == tmp_path / ".cradle"
    assert resolve_home("rel") == tmp_path / "rel"
    monkeypatch.setenv("CRADLE_HOME", "envhome")
    assert resolve_home(None) == tmp_path / "envhome"
