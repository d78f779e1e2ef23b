"""Helpers for the pack tests: the CLI as a real process, pack copies in tmp."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

from cradle_kg.packs.registry import BUILTIN_PACKS
from tests.racers import CLI, run_python

PILOTS = ("customs.hs-router", "infra.uptimeharbor")


def cli(*args: str, cwd: Path | None = None, timeout: float = 600,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m cradle_kg ARGS`` in a process of its own, forked from the fork server
    (:func:`tests.racers.run_python`: no interpreter start to pay), in ``cwd``."""
    return run_python(CLI, args, env={**os.environ, "COLUMNS": "300", **(env or {})},
                      cwd=cwd or os.getcwd(), timeout=timeout)


def pack_dir(pack_id: str) -> Path:
    return BUILTIN_PACKS / pack_id


def manifest_version(pack_id: str) -> str:
    raw = yaml.safe_load((pack_dir(pack_id) / "manifest.yaml").read_text(encoding="utf-8"))
    return str(raw["version"])


def copy_pack(pack_id: str, dest: Path) -> Path:
    """A copy of a built-in pack (without caches) that a test may break."""
    shutil.copytree(pack_dir(pack_id), dest,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc"))
    return dest
