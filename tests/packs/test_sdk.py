"""The pack SDK: its pinned surface, the import rule for packs, manifest-driven
registration (and its refusals), the report helpers and the pack's SQLite helper."""

from __future__ import annotations

import ast
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

import cradle_kg
from cradle_kg import Runtime
from cradle_kg.errors import CradleError, ManifestError
from cradle_kg.packs import load_pack, sdk, testing
from cradle_kg.packs.registry import BUILTIN_PACKS
from cradle_kg.packs.validate import validate_pack

from ..conftest import make_config, proposal

SDK_API = [
    "HOST_FACT_PREFIX", "Action", "Agent", "ApprovalError", "ApprovalStatus", "Approver",
    "AuditEvent",
    "CheckStatus", "CradleError", "FactCheck", "Finding", "IdempotencyClass",
    "IdempotencyConflictError",
    "InputError", "Invariant", "JournalError", "Knowledge", "Outcome", "OutcomeStatus",
    "PackContext", "PackStore", "Permission", "PolicyError", "Projection", "Proposal",
    "ReplayDivergenceError", "RuntimeConfig", "SideEffectClass", "Tool", "ToolCall",
    "ToolError", "ToolRefused", "ToolSpec", "Triple", "UnknownNameError", "Validator", "Verdict",
    "VerificationCheck", "VerificationStatus", "Verifier", "VerifierReport", "VerifyRequest",
    "check", "content_hash", "core_node", "crashpoint", "exclusive_file", "invariant", "iri",
    "knowledge",
    "literal", "load_json_file", "projection", "read_back", "report", "tls_context", "token_hash",
    "tool",
    "validator", "verifier",
]
TESTING_API = ["PackHome", "config", "expect", "fixture", "pack_folder", "pack_home"]
#: what a pack may import from cradle_kg, besides the public API's names
ALLOWED_MODULES = {"cradle_kg.packs.sdk", "cradle_kg.packs.testing"}


def test_the_sdk_surface_is_pinned() -> None:
    assert sdk.__all__ == SDK_API
    assert testing.__all__ == TESTING_API
    for name in [*sdk.__all__]:
        assert getattr(sdk, name) is not None, name


def _cradle_imports(path: Path) -> list[tuple[int, str]]:
    """(line, what) for every import of cradle_kg the file makes that a pack may not."""
    bad: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            bad += [(node.lineno, a.name) for a in node.names
                    if a.name.split(".")[0] == "cradle_kg" and a.name not in ALLOWED_MODULES
                    and a.name != "cradle_kg"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module.split(".")[0] == "cradle_kg"):
            if node.module in ALLOWED_MODULES:
                continue
            for alias in node.names:
                allowed = (node.module == "cradle_kg" and alias.name in cradle_kg.__all__) or (
                    f"{node.module}.{alias.name}" in ALLOWED_MODULES)
                if not allowed:
                    bad.append((node.lineno, f"{node.module}.{alias.name}"))
    return bad


def test_packs_import_only_the_sdk_testing_and_the_public_api() -> None:
    files = sorted(BUILTIN_PACKS.rglob("*.py"))
    assert len(files) > 50  # the walk finds the packs (and their tests)
    offences = [f"{f.relative_to(BUILTIN_PACKS)}:{line}: {what}"
                for f in files for line, what in _cradle_imports(f)]
    assert offences == []


def test_the_import_rule_catches_an_internal_import(tmp_path: Path) -> None:
    sneaky = tmp_path / "x.py"
    sneaky.write_text("from cradle_kg.loop.gate1.findings import Finding\n"
                      "import cradle_kg.storage\n"
                      "from cradle_kg import Runtime, canonical\n"
                      "from cradle_kg.packs import sdk\n")
    assert [w for _, w in _cradle_imports(sneaky)] == [
        "cradle_kg.loop.gate1.findings.Finding", "cradle_kg.storage", "cradle_kg.canonical"]


# --- registration from the manifest --------------------------------------------------------

PACK_CODE = '''
from pydantic import BaseModel
from cradle_kg.packs.sdk import (IdempotencyClass, SideEffectClass, check, invariant, report,
                                 tool, verifier)

class In(BaseModel):
    account: str

class Out(BaseModel):
    account: str

@verifier("mini.read-back")
def read_back_ok(ctx, req):
    return report([check("resource_exists", True), check("expected_state", True)],
                  read_at=ctx.clock(), source="mini",
                  evidence={"touched": (ctx.home / "touched").read_text()})

@tool("mini.touch", input_model=In, output_model=Out, target_from="ledger:{account}",
      side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
      verifier="mini.read-back", blast_radius=("ledger:*",))
def touch(ctx, call):
    (ctx.home / "touched").write_text(ctx.ref)
    return Out(account=call.arguments.account)

@tool("mini.careless", input_model=In, output_model=Out,
      side_effect_class=SideEffectClass.REVERSIBLE, idempotency=IdempotencyClass.NATURAL,
      verifier="mini.read-back")
def careless(ctx, call):
    return Out(account="x")

@invariant("mini.*", name="mini.never-bob")
def never_bob(ctx, action, output):
    return ["bob is never touched"] if output is not None and output.account == "bob" else []

def not_a_declaration(ctx, call):
    return None
'''

POLICY = ('@id("mini-all")\n'
          'permit(principal, action, resource) when { context.tool like "mini.*" };\n')


def mini_pack(root: Path, *, tools: str = "  - code:touch\n", extra: str = "") -> Path:
    folder = root / "mini.pack"
    (folder / "policies").mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "code.py").write_text(PACK_CODE)
    (folder / "policies" / "mini.cedar").write_text(POLICY)
    (folder / "manifest.yaml").write_text(
        "id: mini.pack\nname: mini\nversion: 2.1.0\ncore_ontology: '>=0.1.0'\n"
        "policies:\n  - policies/mini.cedar\n"
        f"tools:\n{tools}verifiers:\n  - code:read_back_ok\n"
        "invariants:\n  - code:never_bob\n" + extra)
    return folder


def _config() -> sdk.RuntimeConfig:
    base = make_config()
    perms = (*base.permissions, sdk.Permission(subject="agent:tester", action_type="mini.*",
                                                resource_selector="ledger:*"))
    return base.model_copy(update={"permissions": perms})


def test_the_manifest_drives_registration(home: Path, tmp_path: Path) -> None:
    folder = mini_pack(tmp_path)
    with testing.pack_home(folder, home, config=_config()) as ph:
        spec = ph.runtime.tools.get("mini.touch")
        assert spec.version == "2.1.0"  # a declared tool without a version is the pack's
        assert ph.runtime.verifiers.has("mini.read-back")
        out = ph.submit("mini.touch", {"account": "a"}, agent="agent:tester",
                        target="ledger:a")
        testing.expect(out, "executed", policies=["mini.pack/mini-all"])
        assert (home / "touched").read_text() == "mini.pack@2.1.0"
        assert out.decision is not None and out.decision.pack_versions == (
            "demo.ledger@1.0.0", "mini.pack@2.1.0")
        # the declared invariant runs at gate 2
        bob = ph.submit("mini.touch", {"account": "bob"}, agent="agent:tester",
                        target="ledger:bob")
        testing.expect(bob, "verification_failed")
        assert any("bob is never touched" in r for r in bob.reasons)


@pytest.mark.parametrize(("tools", "message"), [
    ("  - code:not_a_declaration\n", "is not a tool declaration"),
    ("  - code:read_back_ok\n", "is not a tool declaration"),
    ("  - code:careless\n", "needs `target_from`"),
    ("  - code:missing\n", "has no `missing`"),
])
def test_a_wrong_entry_is_refused_and_changes_nothing(home: Path, tmp_path: Path, tools: str,
                                                      message: str) -> None:
    folder = mini_pack(tmp_path, tools=tools)
    with Runtime(home, config=_config()) as rt:
        before = (rt.policies.version, list(rt.pack_versions))
        with pytest.raises(ManifestError) as caught:
            rt.load_pack(load_pack(folder))
        assert message in caught.value.message and "\n" not in caught.value.message
        assert "manifest.yaml" in caught.value.message
        # refused before anything was put in force
        assert (rt.policies.version, rt.pack_versions) == before
        assert not rt.verifiers.has("mini.read-back")


def test_the_registration_hook_is_refused_with_its_line(tmp_path: Path) -> None:
    folder = mini_pack(tmp_path, extra="runtime: code:touch\n")
    with pytest.raises(ManifestError) as caught:
        load_pack(folder)
    assert "manifest.yaml:13: `runtime` (a registration hook) is no longer read" in (
        caught.value.message)
    assert not validate_pack(folder, reasoner=False).ok


def test_validation_checks_declarations_without_importing(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    folder = mini_pack(tmp_path, tools="  - code:touch\n  - code:nothing_here\n")
    (folder / "code.py").write_text(f"open({str(marker)!r}, 'w').close()\n" + PACK_CODE)
    report = validate_pack(folder, reasoner=False)
    assert not marker.exists()
    assert [e for e in report.errors if "nothing_here" in e]
    assert not [e for e in report.errors if "code:touch" in e or "never_bob" in e]


def test_a_config_naming_plugins_is_refused(home: Path) -> None:
    config = home / "config.json"
    config.write_text(config.read_text().replace('"packs"', '"plugins": ["x:y"], "packs"'))
    with pytest.raises(CradleError) as caught:
        Runtime(home)
    assert "`plugins` is no longer read" in caught.value.message
    assert "\n" not in caught.value.message


def test_demo_tools_arrive_as_a_pack(home: Path) -> None:
    with Runtime(home, config=make_config()) as rt:
        assert "demo.ledger@1.0.0" in rt.pack_versions
        out = rt.submit(proposal("p", "demo.ledger.credit", {"account": "a", "amount": 3}))
        assert str(out.status) == "executed"


# --- report helpers and the pack's own store -----------------------------------------------

def test_read_back_never_matches_what_does_not_exist() -> None:
    missing = sdk.read_back(False, True, exists_detail="no row", state_detail="nothing")
    assert [(c.name, str(c.status), c.detail) for c in missing] == [
        ("resource_exists", "failed", "no row"), ("expected_state", "failed", "nothing")]
    there = sdk.read_back(True, True)
    assert {str(c.status) for c in there} == {"verified"}
    assert str(sdk.check("x", "inconclusive").status) == "inconclusive"
    at = datetime(2026, 1, 1, tzinfo=UTC)
    made = sdk.report([*missing, sdk.check("extra", True)], read_at=at, source="s")
    assert str(made.status) == "failed" and made.read_at == at and made.evidence == {}


SCHEMA = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER NOT NULL);"


def test_pack_store_reads_write_nothing_and_a_removed_file_comes_back(tmp_path: Path) -> None:
    store = sdk.PackStore(tmp_path / "deep" / "s.sqlite", SCHEMA)
    assert store.rows("SELECT * FROM t") == [] and store.row("SELECT 1") is None
    assert not store.path.exists()  # a read creates nothing
    with store.writing() as conn:
        conn.execute("INSERT INTO t VALUES ('a', 1)")
    assert store.rows("SELECT k, v FROM t") == [("a", 1)]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        store.rows("INSERT INTO t VALUES ('b', 2)")
    with pytest.raises(RuntimeError), store.writing() as conn:
        conn.execute("INSERT INTO t VALUES ('c', 3)")
        raise RuntimeError("rolled back")
    assert store.rows("SELECT k FROM t") == [("a",)]
    store.path.unlink()
    with store.writing() as conn:
        conn.execute("INSERT INTO t VALUES ('d', 4)")
    assert store.rows("SELECT k FROM t") == [("d",)]


def _increment(path: str, times: int) -> None:
    store = sdk.PackStore(Path(path), SCHEMA)
    for _ in range(times):
        with store.writing() as conn:  # a tool's read-modify-write of one row
            (v,) = conn.execute("SELECT v FROM t WHERE k = 'n'").fetchone()
            conn.execute("UPDATE t SET v = ? WHERE k = 'n'", (v + 1,))


def test_pack_store_writes_of_several_processes_lose_nothing(tmp_path: Path) -> None:
    """A write block holds the write lock from its first statement: what it read is what it
    writes over. Before, Python's transaction began at the first write, after the reads,
    and 4 processes' 50 increments each of one counter ended at about 50, not 200."""
    from tests.racers import racer, racing_context

    store = sdk.PackStore(tmp_path / "s.sqlite", SCHEMA)
    with store.writing() as conn:
        conn.execute("INSERT INTO t VALUES ('n', 0)")
    ctx = racing_context()
    procs = [racer(ctx, _increment, str(store.path), 50) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert store.row("SELECT v FROM t WHERE k = 'n'") == (200,)


def test_pack_store_syncs_a_write_after_the_writers_queue_is_free(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write is on disk when its block returns, but the next writer does not wait for the
    disk: the commit is not synced under the lock (``synchronous=NORMAL``); the block syncs
    the WAL after it released the writers' queue (``<file>-writer``) — as the journal's
    appends do — and a sync that fails is an error, not a silent return."""
    import fcntl
    import os

    from cradle_kg.packs import store as store_module

    store = sdk.PackStore(tmp_path / "s.sqlite", SCHEMA)
    seen: list[tuple[bool, tuple[object, ...] | None]] = []
    real = store_module.sync_wal

    def sync(database: Path, inode: int | None) -> tuple[bool, int | None]:
        fd = os.open(f"{database}-writer", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if a writer holds it
            free = True
        except BlockingIOError:
            free = False
        finally:
            os.close(fd)
        with sqlite3.connect(str(database)) as other:  # committed before it is synced
            seen.append((free, other.execute("SELECT v FROM t WHERE k = 'n'").fetchone()))
        return real(database, inode)

    monkeypatch.setattr(store_module, "sync_wal", sync)
    with store.writing() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        conn.execute("INSERT INTO t VALUES ('n', 7)")
    assert seen == [(True, (7,))]
    monkeypatch.setattr(store_module, "sync_wal", lambda database, inode: (False, inode))
    with pytest.raises(OSError, match="could not be synced"), store.writing() as conn:
        conn.execute("UPDATE t SET v = 8 WHERE k = 'n'")
