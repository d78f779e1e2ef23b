"""A home with the demo ledger and a test tool, served by real ``cradle-kg mcp`` processes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cradle_kg.config import save_config
from cradle_kg.demo.scenario import AGENT, demo_config, prepare_home
from cradle_kg.records import Permission
from tests.racers import CLI, run_python

pytest.importorskip("mcp")

ROOT = Path(__file__).resolve().parents[2]
TEST_POLICY = """
@id("test-tools")
permit(principal, action, resource) when { context.tool like "test.*" };
"""


def mcp_home(root: Path) -> Path:
    prepare_home(root)
    (root / "policies" / "test.cedar").write_text(TEST_POLICY)
    shutil.copytree(Path(__file__).parent / "testpack", root / "packs" / "test.mcp",
                    ignore=shutil.ignore_patterns("__pycache__"))
    base = demo_config()
    save_config(root / "config.json", base.model_copy(update={
        "permissions": (*base.permissions, Permission(subject=AGENT, action_type="test.*",
                                                      resource_selector="test:*")),
        "packs": (*base.packs, "test.mcp")}))
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return mcp_home(tmp_path / "home")


def env() -> dict[str, str]:
    """The subprocesses run from the repository root."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def cli(*args: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m cradle_kg ARGS`` in another process (an approver's, a second host's),
    forked from the fork server (:func:`tests.racers.run_python`: no interpreter start)."""
    return run_python(CLI, args, env={**env(), **(extra_env or {})}, cwd=ROOT, timeout=120)
