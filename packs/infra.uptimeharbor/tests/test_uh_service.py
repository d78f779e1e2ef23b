"""The service, the fixture repository, the environment manager and the probe — all real."""

from __future__ import annotations

import importlib
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.packs.sdk import InputError, ToolError

PKG = "cradle_pack_infra_uptimeharbor"
envs_mod = importlib.import_module(f"{PKG}.service.envs")
probe_mod = importlib.import_module(f"{PKG}.probe")
gitutil = importlib.import_module(f"{PKG}.gitutil")

EXPECTED_HEALTH = {
    # tag: (staging healthy, production healthy)
    "good": (True, True),
    "outage": (False, False),
    "green_not_fixed": (False, False),
    "fix": (True, True),
    "fix_staging_only": (True, False),
}


def test_fixture_history_is_real_git(repo: Any) -> None:
    log = gitutil.git(repo.path, "log", "--format=%H", "main").split()
    assert log == [repo["fix"], repo["green_not_fixed"], repo["outage"], repo["good"]]
    assert gitutil.git(repo.path, "rev-parse", "fix-staging-only") == repo["fix_staging_only"]
    assert len(set(repo.commits.values())) == 5


@pytest.mark.parametrize("tag", sorted(EXPECTED_HEALTH))
def test_health_comes_from_the_committed_files(harbor: Any, repo: Any, tag: str) -> None:
    for env, expected in zip(("staging", "production"), EXPECTED_HEALTH[tag], strict=True):
        entry = harbor.envs.switch(env, repo[tag])
        result = probe_mod.probe(probe_mod.base_url_for(entry))
        assert result["healthy"] is expected, (tag, env, result)
        assert result["status_code"] == (200 if expected else 500)
        assert result["commit"] == repo[tag]  # from git archive export-subst, not the tool
        assert result["checked_at"].endswith("Z") and result["latency_ms"] >= 0


def test_stop_kills_the_process_group_and_clears_state(harbor: Any, repo: Any) -> None:
    entry = harbor.envs.start("staging", repo["good"])
    pid = entry["pid"]
    assert os.getpgid(pid) == pid  # its own session, so its own group
    harbor.envs.stop("staging")
    assert envs_mod._gone(pid)
    state = harbor.store.env("staging")
    assert state["pid"] is None and state["port"] is None
    assert state["commit"] == repo["good"]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", entry["port"]), timeout=0.5).close()


def test_switch_replaces_process_and_records_history(harbor: Any, repo: Any) -> None:
    first = harbor.envs.switch("production", repo["good"], key="k-one")
    second = harbor.envs.switch("production", repo["outage"], key="k-two")
    assert first["pid"] != second["pid"]
    assert envs_mod._gone(first["pid"])
    history = harbor.store.env("production")["history"]
    assert [(h["commit"], h["key"]) for h in history] == [
        (repo["good"], "k-one"), (repo["outage"], "k-two")]


def test_start_twice_is_refused(harbor: Any, repo: Any) -> None:
    harbor.envs.start("staging", repo["good"])
    with pytest.raises(ToolError, match="already running"):
        harbor.envs.start("staging", repo["good"])


def test_state_file_is_written_atomically(harbor: Any, repo: Any) -> None:
    harbor.envs.switch("staging", repo["good"])
    raw = json.loads(harbor.store.path.read_text())
    assert raw["envs"]["staging"]["commit"] == repo["good"]
    leftovers = [p.name for p in harbor.store.path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_start_failure_leaves_no_process(tmp_path: Path, repo: Any) -> None:
    manager = envs_mod.EnvManager(tmp_path / "home", repo.path, python="/bin/false")
    with pytest.raises(ToolError, match="exited during start"):
        manager.start("staging", repo["good"])
    assert manager.store.env("staging").get("pid") is None


def test_readiness_timeout_is_bounded(tmp_path: Path, repo: Any) -> None:
    sleeper = tmp_path / "sleeper.sh"
    sleeper.write_text("#!/bin/sh\nexec sleep 30\n")
    sleeper.chmod(0o755)
    manager = envs_mod.EnvManager(tmp_path / "home", repo.path, python=str(sleeper),
                                  ready_timeout_s=0.5)
    with pytest.raises(ToolError, match="not ready within"):
        manager.start("staging", repo["good"])
    assert all(envs_mod._gone(pid) for pid in list(envs_mod._CHILDREN))


def test_unknown_env_and_commit_are_input_errors(harbor: Any) -> None:
    with pytest.raises(InputError):
        harbor.envs.start("qa", "main")
    with pytest.raises(InputError):
        harbor.envs.resolve("no-such-commit")
    with pytest.raises(InputError):
        harbor.envs.resolve("--all")


def test_probe_reports_unreachable_service() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = probe_mod.probe(f"http://127.0.0.1:{port}", timeout_s=0.5)
    assert result["healthy"] is False and result["reachable"] is False
    assert result["status_code"] is None and not result["timed_out"]


def test_probe_times_out_on_a_silent_server() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)  # accepts connections in the backlog, never answers
        port = server.getsockname()[1]
        result = probe_mod.probe(f"http://127.0.0.1:{port}", timeout_s=0.3)
    assert result["timed_out"] is True and result["healthy"] is False


def test_concurrent_builds_of_one_commit_agree(tmp_path: Path, repo: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight builds of one commit at once, five times over: the checkout is exported once
    and every build returns it (before, each builder exported its own and replaced the
    others' finished checkout, so one could read a REVISION another was removing: a
    FileNotFoundError, seen once in a loaded suite)."""
    import threading
    import time

    exports: list[str] = []
    real_export = envs_mod.export_tree

    def slow_export(*args: Any, **kwargs: Any) -> Any:
        exports.append(str(args[1]))
        time.sleep(0.02)  # the builders overlap, as they do on a loaded machine
        return real_export(*args, **kwargs)

    monkeypatch.setattr(envs_mod, "export_tree", slow_export)
    for round_ in range(5):
        manager = envs_mod.EnvManager(tmp_path / f"home-{round_}", repo.path)
        built: list[Path] = []
        failed: list[BaseException] = []

        def build(manager: Any = manager, built: list[Path] = built,
                  failed: list[BaseException] = failed) -> None:
            try:
                built.append(manager.build("staging", repo["fix"]))
            except BaseException as exc:  # reported below
                failed.append(exc)

        threads = [threading.Thread(target=build) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not failed and len(built) == 8 and len(set(built)) == 1, failed
        assert len(exports) == round_ + 1  # built once; never replaced by a later builder
        assert (built[0] / "REVISION").read_text().strip() == repo["fix"]
        # no temp dirs left
        assert [p.name for p in built[0].parent.iterdir()] == [built[0].name]
