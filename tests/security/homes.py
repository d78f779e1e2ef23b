"""A demo home whose journal has been opened once: what the CLI attack modules run against."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.storage.opening import JOURNAL_URL_ENV


def opened_demo_home(factory: pytest.TempPathFactory, name: str, *,
                     embedded: bool = False) -> Path:
    """``embedded``: its journal is the home's SQLite file whatever backend the suite runs
    on (``--journal-backend postgresql``): for a command that reads that file itself."""
    root = factory.mktemp(name) / "home"
    with pytest.MonkeyPatch.context() as env:
        if embedded:
            env.delenv(JOURNAL_URL_ENV, raising=False)
        prepare_home(root)
        with Runtime(root):
            pass
    return root


def without_journal_url() -> dict[str, str]:
    """This process's environment without a journal URL (a subprocess on the home's file)."""
    return {k: v for k, v in os.environ.items() if k != JOURNAL_URL_ENV}
