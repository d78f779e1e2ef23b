"""Seeded mutation fuzzing of every file an operator or a pack author hands the runtime.

Each well-formed file (a home's ``config.json`` and ``api-tokens.json``; a pack's
manifest, Turtle ontology and shapes, Cedar policy, graph policy and named query; the MCP
proxy's contracts; a workflow; a policy dropped into a running home's ``policies/``) is
turned by :func:`.malformed.mutants` into a fixed list of malformed ones, and each goes
through the loader the CLI uses, in process: a typed :class:`CradleError` in one line or
a load, never another exception; an unloadable policy set denies. A few go through the
real CLI: one ``error:`` line, the documented exit code, no traceback, the home as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.config import load_config
from cradle_kg.errors import CradleError
from cradle_kg.home import Home
from cradle_kg.integrations.contracts import load_contracts
from cradle_kg.packs.validate import validate_pack
from cradle_kg.policy.cedar import PolicyEngine
from cradle_kg.server.auth import read_agent_tokens
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.workflow.definitions import load_file

from .homes import FREEZE, credit, without_journal_url
from .inputcli import cli
from .malformed import PACK_FILES, home_with_pack, mutants, snapshot

EXAMPLES = Path(__file__).parents[2] / "examples"
TOKENS = json.dumps({"identities": {"agent:ledger-assistant": {
    "token_hash": "ab" * 32, "issued_at": "2026-01-01T00:00:00+00:00", "host": True}}})


@pytest.fixture(autouse=True)
def _own_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)  # the homes' own SQLite files


def _typed_or_loaded(load: Callable[[], Any], what: str, *, one_line: bool = True) -> None:
    try:
        load()
    except CradleError as exc:
        assert not one_line or "\n" not in exc.message.strip(), (what, exc.message[:300])


def _fuzz(target: Path, kind: str, seed: int, load: Callable[[], Any], *,
          one_line: bool = True) -> int:
    original = target.read_bytes()
    cases = mutants(original, kind=kind, seed=seed)
    try:
        for name, data in cases:
            target.write_bytes(data)
            _typed_or_loaded(load, f"{target.name}: {name}", one_line=one_line)
    finally:
        target.write_bytes(original)
    return len(cases)


def test_home_files(tmp_path: Path) -> None:
    home, _ = home_with_pack(tmp_path / "home")
    (home / "api-tokens.json").write_text(TOKENS, encoding="utf-8")
    n = _fuzz(home / "config.json", "json", 1, lambda: load_config(home / "config.json"))
    n += _fuzz(home / "api-tokens.json", "json", 2, lambda: read_agent_tokens(Home(home)))

    def open_home() -> None:
        with Runtime(home, graph_sync=False):
            pass
    n += _fuzz(home / "config.json", "json", 3, open_home)
    assert n > 60


@pytest.mark.parametrize("name", sorted(PACK_FILES))
def test_pack_files(tmp_path: Path, name: str) -> None:
    home, folder = home_with_pack(tmp_path / "home")
    with Runtime(home) as rt:
        assert rt.graph() is not None
    assert validate_pack(folder, reasoner=False).ok

    def review_and_open() -> None:
        report = validate_pack(folder, reasoner=False)  # a report, never an exception
        assert all("\n" not in e for e in report.errors), report.errors
        with Runtime(home) as rt:
            rt.graph()  # the ontology's knowledge graph is installed here
    _fuzz(folder / name, PACK_FILES[name][1], 10 + sorted(PACK_FILES).index(name),
          review_and_open)


@pytest.mark.parametrize("source", ["notes_contracts.yaml", "workflows/credit-review.yaml",
                                    "workflows/message-triage.yaml"])
def test_operator_yaml(tmp_path: Path, source: str) -> None:
    target = tmp_path / Path(source).name
    target.write_bytes((EXAMPLES / source).read_bytes())
    load = load_contracts if source.startswith("notes") else load_file
    # a workflow's error lists every problem, one per line (WorkflowFileError)
    _fuzz(target, "yaml", 20, lambda: load(target), one_line=load is load_contracts)


def test_a_policy_dropped_into_a_running_home_fails_closed(tmp_path: Path) -> None:
    home, _ = home_with_pack(tmp_path / "home")
    dropped = home / "policies" / "incident.cedar"
    with Runtime(home, graph_sync=False) as rt:
        assert rt.submit(credit("c-0")).status is OutcomeStatus.EXECUTED
        for i, (name, data) in enumerate(mutants(FREEZE.encode(), kind="cedar", seed=30)):
            dropped.write_bytes(data)
            try:
                PolicyEngine.from_paths(sorted((home / "policies").glob("*.cedar")))
                loads = True
            except CradleError:
                loads = False
            outcome = rt.submit(credit(f"c-{i + 1}"))
            if not loads:  # fail closed: nothing is allowed until the files load
                assert outcome.status is OutcomeStatus.DENIED, (name, outcome.reasons)
        assert rt.journal.verify().intact


def _one_error_line(done: Any, code: int = 2) -> None:
    assert done.returncode == code, (done.returncode, done.stdout[-500:], done.stderr[-500:])
    assert "Traceback" not in done.stderr and "error: unexpected " not in done.stderr, done.stderr
    assert done.stderr.startswith("error: "), done.stderr


def _kept(home: Path) -> dict[str, bytes]:
    """The home's files but its graph store's (a projection RocksDB writes logs to on
    every open, rebuilt from the journal) and its lock files."""
    return {k: v for k, v in snapshot(home).items()
            if not k.startswith("graph") and not k.endswith(".lock")}


def test_the_cli_answers_in_one_line_and_leaves_the_home(tmp_path: Path) -> None:
    home, folder = home_with_pack(tmp_path / "home")
    proposal = tmp_path / "credit.json"
    proposal.write_text(json.dumps(credit("p-1")), encoding="utf-8")
    env = without_journal_url()
    with Runtime(home) as rt:  # a journal with a call in it
        assert rt.submit(credit("p-0")).ok
    cases: list[tuple[Path, str, int, list[str]]] = [
        (home / "config.json", "json", 40, ["submit", str(proposal), "--home", str(home)]),
        (folder / "manifest.yaml", "yaml", 41, ["submit", str(proposal), "--home", str(home)]),
        (folder / "rules.cedar", "cedar", 42, ["submit", str(proposal), "--home", str(home)]),
    ]
    for target, kind, seed, args in cases:
        original = target.read_bytes()
        picked = [m for m in mutants(original, kind=kind, seed=seed)
                  if m[0] in ("half", "latin-1", "deep-0")]
        for _, data in picked:
            target.write_bytes(data)
            before = _kept(home)
            _one_error_line(cli(*args, env=env, timeout=60))
            assert _kept(home) == before, target.name
        target.write_bytes(original)
    flow = tmp_path / "flow.yaml"
    flow.write_bytes((EXAMPLES / "workflows" / "credit-review.yaml").read_bytes()[:-40])
    done = cli("workflow", "validate", str(flow), timeout=60)  # its report: exit 1
    assert done.returncode == 1 and "flow.yaml:" in done.stdout, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    contracts = tmp_path / "contracts.yaml"
    contracts.write_bytes(b"tools:\n  - " + b"[" * 50_000)
    _one_error_line(cli("mcp", "proxy", "--contracts", str(contracts), "--home", str(home),
                        "--", "true", env=env, timeout=60))
    _one_error_line(cli("evidence", "add", str(tmp_path), "--as", "agent:ledger-assistant",
                        "--home", str(home), env=env, timeout=60))
