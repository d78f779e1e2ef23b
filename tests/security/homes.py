"""A demo home whose journal has been opened once: what the CLI attack modules run against."""

from __future__ import annotations

from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import prepare_home


def opened_demo_home(factory: pytest.TempPathFactory, name: str) -> Path:
    root = factory.mktemp(name) / "home"
    prepare_home(root)
    with Runtime(root):
        pass
    return root
