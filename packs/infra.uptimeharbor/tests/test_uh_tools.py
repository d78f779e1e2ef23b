"""The tools and their contracts: read-only probes, isolated tests, keyed deploys."""

from __future__ import annotations

import importlib
import threading
from typing import Any

import pytest

from cradle_kg.packs.sdk import IdempotencyConflictError, InputError, ToolError

PKG = "cradle_pack_infra_uptimeharbor"
ops = importlib.import_module(f"{PKG}.tools.ops")
contracts = importlib.import_module(f"{PKG}.tools.contracts")
harbor_mod = importlib.import_module(f"{PKG}.harbor")


def test_contracts_are_complete_and_honest() -> None:
    assert set(contracts.CONTRACTS) == set(ops.TOOLS)
    for tool_id, c in contracts.CONTRACTS.items():
        assert c["id"] == tool_id and c["version"] == "1.0.0"
        assert c["side_effect_class"] in contracts.SIDE_EFFECT_CLASSES
        assert c["idempotency"] in contracts.IDEMPOTENCY_CLASSES
        assert c["input_schema"]["type"] == "object" and c["input_schema"]["required"]
        assert c["output_schema"]["type"] == "object" and c["output_schema"]["required"]
        assert c["required_scopes"]
        if c["compensation"] is not None:
            assert c["compensation"] in contracts.CONTRACTS
        if c["side_effect_class"] != "read_only":
            # anything that changes an environment is keyed and can be undone
            assert c["idempotency"] == "keyed" and c["compensation"] and c["supports_dry_run"]
    assert contracts.CONTRACTS["infra.deploy"]["side_effect_class"] == "compensable"
    assert contracts.CONTRACTS["infra.deploy"]["compensation"] == "infra.rollback"
    assert contracts.CONTRACTS["infra.run_tests"]["side_effect_class"] == "read_only"


def test_detect_outage_is_read_only(harbor: Any, repo: Any) -> None:
    harbor.envs.switch("production", repo["outage"])
    before = harbor.store.path.read_bytes()
    seen = ops.detect_outage(harbor, "production")
    assert seen["outage"] is True and seen["status_code"] == 500
    assert seen["commit"] == repo["outage"]
    assert harbor.store.path.read_bytes() == before
    harbor.envs.switch("production", repo["good"])
    assert ops.detect_outage(harbor, "production")["outage"] is False


def test_detect_outage_when_nothing_runs(harbor: Any) -> None:
    seen = ops.detect_outage(harbor, "staging")
    assert seen["outage"] is True and seen["reachable"] is False


@pytest.mark.parametrize(
    ("tag", "outcome"),
    [("good", "passed"), ("outage", "failed"), ("green_not_fixed", "passed"), ("fix", "passed")],
)
def test_run_tests_is_an_isolated_observation(harbor: Any, repo: Any, tag: str,
                                              outcome: str) -> None:
    obs = ops.run_tests(harbor, repo[tag])
    assert obs["kind"] == "observation"
    assert obs["outcome"] == outcome, obs["output"]
    assert obs["commit"] == repo[tag]
    assert list((harbor.home / "sandbox").iterdir()) == []  # the checkout is thrown away
    assert harbor.snapshot()["envs"] == {}  # no environment was touched


def test_same_key_never_deploys_twice(harbor: Any, repo: Any) -> None:
    first = ops.deploy(harbor, "staging", repo["good"], "key-deploy-1")
    again = ops.deploy(harbor, "staging", repo["good"], "key-deploy-1")
    assert first["replayed"] is False and again["replayed"] is True
    assert again["pid"] == first["pid"]
    history = harbor.store.env("staging")["history"]
    assert len(history) == 1
    assert harbor.snapshot()["idempotency"]["key-deploy-1"]["status"] == "completed"


def test_concurrent_calls_with_one_key_deploy_once(harbor: Any, repo: Any) -> None:
    results: list[str] = []

    def call() -> None:
        try:
            results.append("replayed" if ops.deploy(harbor, "staging", repo["good"],
                                                    "key-race-1")["replayed"] else "deployed")
        except ToolError:
            results.append("in_flight")

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results.count("deployed") == 1
    assert len(harbor.store.env("staging")["history"]) == 1


def test_key_reuse_for_another_commit_is_a_conflict(harbor: Any, repo: Any) -> None:
    ops.deploy(harbor, "staging", repo["good"], "key-conflict")
    with pytest.raises(IdempotencyConflictError):
        ops.deploy(harbor, "staging", repo["fix"], "key-conflict")
    with pytest.raises(IdempotencyConflictError):
        ops.deploy(harbor, "production", repo["good"], "key-conflict")


def test_deploy_rejects_bad_input(harbor: Any, repo: Any) -> None:
    with pytest.raises(InputError):
        ops.deploy(harbor, "staging", repo["good"], "short")
    with pytest.raises(InputError):
        ops.deploy(harbor, "qa", repo["good"], "key-bad-env")
    with pytest.raises(InputError):
        ops.deploy(harbor, "staging", "deadbeef" * 5, "key-bad-commit")


def test_dry_run_changes_nothing(harbor: Any, repo: Any) -> None:
    plan = ops.deploy(harbor, "staging", repo["good"], "key-dry-run", dry_run=True)
    assert plan["dry_run"] is True and plan["commit"] == repo["good"]
    assert harbor.snapshot()["envs"] == {} and harbor.snapshot()["idempotency"] == {}


def test_interrupted_deploy_is_reconciled_not_replayed(harbor: Any, repo: Any) -> None:
    # a crash after the side effect, before the completion was recorded
    with harbor.store.transaction() as state:
        state["idempotency"]["key-crash-1"] = {
            "tool": "deploy", "env": "staging", "commit": repo["good"], "status": "started"}
    harbor.envs.switch("staging", repo["good"], key="key-crash-1")
    with pytest.raises(ToolError, match="interrupted"):
        ops.deploy(harbor, "staging", repo["good"], "key-crash-1")
    found = ops.lookup(harbor, "key-crash-1")
    assert found["found"] and found["happened"] and found["live_commit"] == repo["good"]
    assert ops.reconcile(harbor, "key-crash-1")["status"] == "completed"
    assert ops.deploy(harbor, "staging", repo["good"], "key-crash-1")["replayed"] is True
    assert len(harbor.store.env("staging")["history"]) == 1

    # a crash before the side effect: lookup says it did not happen; a retry may run it
    with harbor.store.transaction() as state:
        state["idempotency"]["key-crash-2"] = {
            "tool": "deploy", "env": "staging", "commit": repo["fix"], "status": "started"}
    assert ops.lookup(harbor, "key-crash-2")["happened"] is False
    assert ops.reconcile(harbor, "key-crash-2")["status"] == "abandoned"
    assert ops.deploy(harbor, "staging", repo["fix"], "key-crash-2")["replayed"] is False
    assert ops.lookup(harbor, "key-crash-2")["happened"] is True
    assert ops.lookup(harbor, "key-unknown")["found"] is False


def test_rollback_returns_to_previous_verified_commit(harbor: Any, repo: Any) -> None:
    ops.deploy(harbor, "production", repo["good"], "key-rb-good")
    harbor_mod.record_verification(harbor, verifier="service_healthy", status="verified",
                                   detail={}, env="production", commit=repo["good"])
    ops.deploy(harbor, "production", repo["outage"], "key-rb-outage")
    ops.deploy(harbor, "production", repo["fix_staging_only"], "key-rb-fso")
    assert ops.rollback(harbor, "production", "key-rb-1", dry_run=True)["commit"] == repo["good"]
    result = ops.rollback(harbor, "production", "key-rb-1")
    assert result["commit"] == repo["good"] and result["previous_commit"] == repo[
        "fix_staging_only"]
    assert ops.detect_outage(harbor, "production")["outage"] is False
    assert ops.rollback(harbor, "production", "key-rb-1")["replayed"] is True


def test_rollback_without_a_verified_commit_is_refused(harbor: Any, repo: Any) -> None:
    ops.deploy(harbor, "production", repo["outage"], "key-rb-none")
    with pytest.raises(ToolError, match="no previously verified commit"):
        ops.rollback(harbor, "production", "key-rb-none-1")
