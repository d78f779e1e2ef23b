"""Helpers for the pack tests: the CLI as a real process, pack copies in tmp."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from cradle_kg.packs.registry import BUILTIN_PACKS

PILOTS = ("customs.hs-router", "infra.uptimeharbor")


def cli(*args: str, cwd: Path | None = None, timeout: float = 600,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cradle_kg", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "COLUMNS": "300", **(env or {})}, check=False)


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
