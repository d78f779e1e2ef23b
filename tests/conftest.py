"""Shared fixtures: real homes in tmp dirs, the demo's tools, and a few misbehaving tools."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from cradle_kg import Runtime, ToolCall, ToolSpec, VerifierReport, VerifyRequest
from cradle_kg.config import Limit, RuntimeConfig
from cradle_kg.demo.scenario import AGENT, DemoStep, demo_config, prepare_home, run_demo
from cradle_kg.records import (
    Agent,
    IdempotencyClass,
    Permission,
    SideEffectClass,
    VerificationCheck,
    VerificationStatus,
)
from tests.demo_template import FACTORY, demo_template, embedded
from tests.graph_backends import fresh_oxigraph, graph_backend, oxigraph_server  # noqa: F401
from tests.graph_engines import fresh_virtuoso, virtuoso  # noqa: F401
from tests.journal_backends import journal_backend, pg_url  # noqa: F401

TEST_POLICY = """
@id("test-tools")
permit(principal, action, resource) when { context.tool like "test.*" };
"""


class Echo(BaseModel):
    value: str = "x"


class EchoOut(BaseModel):
    ok: bool = True
    value: str = "x"
    side_effects: list[dict[str, Any]] = []


def proposal(pid: str, tool: str, arguments: dict[str, Any], *, agent: str = AGENT,
             target: str | None = None, **extra: Any) -> dict[str, Any]:
    action = {"action_type": tool, "target": target or "ledger:" + str(
        arguments.get("account", "x")), "arguments": arguments}
    action.update(extra.pop("action", {}))
    return {"id": pid, "task_id": extra.pop("task_id", "task-" + pid), "agent_id": agent,
            "action": action, **extra}


def _verify_ok(req: VerifyRequest) -> VerifierReport:
    return VerifierReport(
        checks=(VerificationCheck(name="resource_exists", status=VerificationStatus.VERIFIED),
                VerificationCheck(name="expected_state", status=VerificationStatus.VERIFIED)),
        read_at=datetime.now(UTC), evidence={"read": "ok"}, source="test")


def _verify_raises(req: VerifyRequest) -> VerifierReport:
    raise RuntimeError("verifier exploded")


def register_test_tools(rt: Runtime) -> None:
    """Tools that misbehave in the ways gate 1 and gate 2 must handle."""
    rt.register_verifier("test.ok", _verify_ok)
    rt.register_verifier("test.raises", _verify_raises)

    def raising(call: ToolCall) -> EchoOut:
        raise ValueError("the tool broke")

    def bad_output(call: ToolCall) -> dict[str, Any]:
        return {"ok": "not-a-bool-at-all", "value": 12}

    def wide(call: ToolCall) -> EchoOut:
        return EchoOut(side_effects=[{"kind": "write", "resource": "prod-db:users"}])

    def fine(call: ToolCall) -> EchoOut:
        return EchoOut()

    common: dict[str, Any] = dict(version="1", input_model=Echo, output_model=EchoOut,
                                  side_effect_class=SideEffectClass.REVERSIBLE,
                                  idempotency=IdempotencyClass.NATURAL, blast_radius=("test:*",),
                                  target_from="test:*")
    rt.register_tool(ToolSpec(id="test.raising", verifier="test.ok", **common), raising)
    rt.register_tool(ToolSpec(id="test.bad_output", verifier="test.ok", **common), bad_output)
    rt.register_tool(ToolSpec(id="test.wide", verifier="test.ok", **common), wide)
    rt.register_tool(ToolSpec(id="test.verifier_raises", verifier="test.raises", **common), fine)
    rt.register_tool(ToolSpec(id="test.evidence", verifier="test.ok", requires_evidence=1,
                              **common), fine)


def make_config(**overrides: Any) -> RuntimeConfig:
    base = demo_config()
    agents = (*base.agents, Agent(id="agent:tester", permitted_scopes=(),
                                  environments=("local", "staging")))
    perms = (*base.permissions, Permission(subject="agent:tester", action_type="test.*",
                                           resource_selector="test:*"))
    values: dict[str, Any] = {"agents": agents, "permissions": perms,
                              "limits": (Limit(scope="agent", window_seconds=60,
                                               max_calls=1000),)}
    values.update(overrides)
    return base.model_copy(update=values)


class Clock:
    """A clock a test moves by hand (``clock.now += timedelta(...)``)."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A folder for homes whose processes are killed: tmpfs when there is one (each
    commit's fsyncs, and RocksDB's, cost little there; a SIGKILL is a SIGKILL on any file
    system: what the killed process wrote is in the page cache either way), else tmp."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="cradle-scratch-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    prepare_home(root)
    (root / "policies" / "test.cedar").write_text(TEST_POLICY)
    return root


@pytest.fixture
def rt(home: Path) -> Iterator[Runtime]:
    runtime = Runtime(home, config=make_config())
    register_test_tools(runtime)
    yield runtime
    runtime.close()


@pytest.fixture(scope="session", autouse=True)
def _demo_template_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``tests/demo_template.py``'s callers that are handed no factory use the session's."""
    FACTORY[:] = [tmp_path_factory]
    yield
    FACTORY.clear()


@pytest.fixture(scope="session")
def pilots_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[DemoStep]]:
    """``run_demo(pilots=True)`` (what ``cradle-kg demo`` runs) once per *run* — 13-25 s
    here — for the modules that only read its home and its steps: built once by the first
    worker that needs it into the run's temporary folder (under a lock; its steps pickled
    beside it), and copied whole into each session's own folder (~0.2 s) — each xdist
    worker built its own before. Nothing may change it (a test that changes a demo home
    builds its own or copies this one); the one writer, test_demo_knowledge's ``graph
    rebuild``, asserts that the graph comes back quad for quad, on its session's copy.
    A home on a PostgreSQL journal or a remote graph store (``--journal-backend``,
    ``--graph-backend``) is not a folder to copy: built here, as before."""
    home = tmp_path_factory.mktemp("pilots-demo") / "home"
    if not embedded():
        return home, run_demo(home, pilots=True)
    template, steps = demo_template(tmp_path_factory, pilots=True)
    shutil.copytree(template, home, symlinks=True)
    return home, steps


@pytest.fixture(scope="session")
def chromium() -> str:
    """The headless Chromium the page tests drive (installed on first need, as root)."""
    from tests.server.cdp import ensure_chromium

    found = ensure_chromium()
    if found is None:
        pytest.skip("headless Chromium is not installed and could not be installed "
                    "(apt-get install -y chromium, as root)")
    return found
