"""Load the pack folder as a package under a synthetic name, and give tests a live harbor.

Every test that starts a service does it through the ``harbor`` fixture, whose teardown
stops every environment and then checks that no UptimeHarbor process of this test
session is left alive (no orphans, even when a test fails half-way).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PACK = Path(__file__).resolve().parent.parent
PKG = "cradle_pack_infra_uptimeharbor"


def _load_pack() -> ModuleType:
    if PKG in sys.modules:
        return sys.modules[PKG]
    spec = importlib.util.spec_from_file_location(
        PKG, PACK / "__init__.py", submodule_search_locations=[str(PACK)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[PKG] = module
    spec.loader.exec_module(module)
    return module


_load_pack()


def mod(name: str) -> Any:
    """A submodule of the pack, e.g. ``mod("tools.ops")``."""
    return importlib.import_module(f"{PKG}.{name}")


def live_service_pids(marker: str) -> list[int]:
    """Pids of running ``app.py`` processes whose command line mentions ``marker``."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if "app.py" in cmd and marker in cmd and not stat.split(") ", 1)[1].startswith("Z"):
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="session")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The fixture git repository (built once; tests never write to it)."""
    return mod("service.repo_fixture").build_repo(tmp_path_factory.mktemp("uh-repo") / "repo")


@pytest.fixture
def harbor(tmp_path: Path, repo: Any) -> Iterator[Any]:
    h = mod("harbor").Harbor(tmp_path / "home", repo.path)
    try:
        yield h
    finally:
        h.envs.stop_all()
        leaked = live_service_pids(str(tmp_path))
        for pid in leaked:  # pragma: no cover - only on a bug; clean up, then fail
            os.killpg(pid, 9)
        assert not leaked, f"leaked uptimeharbor processes: {leaked}"


@pytest.fixture(scope="session", autouse=True)
def _no_orphans_at_exit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    base = str(tmp_path_factory.getbasetemp())
    assert not live_service_pids(base), "uptimeharbor processes outlived the test session"


@pytest.fixture
def service_pids() -> Any:
    return live_service_pids


@pytest.fixture
def approver() -> Any:
    def approve(request: Any) -> dict[str, Any]:
        return {"approved": True, "approver_id": "human:sre-on-call",
                "action_digest": request["action_digest"]}

    return approve
