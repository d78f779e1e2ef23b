"""The command line, run as users run it: a real process, real files, exit codes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cradle_kg.records import SCHEMAS

from .heavy_imports import imported_after
from .inprocess import run_cli

#: a module whose set-up is long (servers, browsers, packs built): run first
pytestmark = pytest.mark.slow


def process_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real console entry, in its own process (where the process is the point)."""
    import os

    return subprocess.run([sys.executable, "-m", "cradle_kg", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"},
                          check=False)


def cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """The CLI in this process: same main, exit code, stdout and stderr (tests/inprocess)."""
    return run_cli(*args, stdin=stdin, env=env)


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("demo") / "home"
    done = cli("demo", "--home", str(home))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "UNEXPECTED" not in done.stdout
    return home


def test_demo_then_audit_verify_is_intact(demo_home: Path) -> None:
    done = cli("audit", "verify", "--home", str(demo_home), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["intact"] and report["events"] > 20


@pytest.mark.sqlite_only("edits a row of the SQLite file; PostgreSQL's tamper corpus is "
                         "test_05_journal_tamper_postgresql")
def test_audit_verify_names_the_edited_event(demo_home: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(demo_home, copy)
    conn = sqlite3.connect(str(copy / "journal.sqlite"))
    with conn:
        conn.execute("UPDATE events SET actor = 'mallory' WHERE seq = 7")
    conn.close()
    done = cli("audit", "verify", "--home", str(copy))
    assert done.returncode == 1
    assert "evt-0000000007" in done.stdout


def _imported_after(*argv: str) -> tuple[str, list[str]]:
    """``cradle-kg argv`` in a fresh interpreter: its stdout, and which of the heavy modules
    (graph, SHACL, HTTP, server, the graph store and projection, the customs pipeline, rich's
    emoji codes, the condition language for a config without conditions, tarfile) it
    imported."""
    return imported_after(argv, modules=(
        "cradle_kg.loop.runtime", "cradle_kg.graph.store", "cradle_kg.storage.graph",
        "cradle_kg.graph.project", "rich._emoji_codes", "cradle_kg.conditions", "tarfile"),
        prefix="cradle_pack_customs",
        suffixes=(".pipeline", ".extraction"))


def test_tools_list_on_the_demo_home_imports_no_rdflib_httpx_or_graph(demo_home: Path) -> None:
    """The three packs are imported and checked (the ledger's postcondition shapes
    compiled, by pyoxigraph and the Rust engine), without rdflib, httpx (the infra pack
    imports it where it probes), the graph store or the customs pack's pipeline (imported
    where a goods line is decided) — start-up time, issue 17."""
    out, heavy = _imported_after("tools", "list", "--home", str(demo_home), "--format", "json")
    ids = {t["id"] for t in json.loads(out)}
    assert {"demo.ledger.credit", "demo.ledger.close_account"} <= ids
    assert any(i.startswith("customs.") for i in ids) and any(i.startswith("infra.")
                                                             for i in ids), ids
    assert heavy == []
    table, heavy = _imported_after("tools", "list", "--home", str(demo_home))
    assert "demo.ledger" in table and heavy == []  # nor rich's emoji codes


def test_tools_list_imports_no_journal(demo_home: Path) -> None:
    """Listing tools reads the configuration and the packs, never the journal: the storage
    and loop packages load their modules on first use (issue 17, start-up)."""
    out, imported = imported_after(
        ["tools", "list", "--home", str(demo_home), "--format", "json"], roots=("psycopg",),
        modules=("cradle_kg.storage.journal", "cradle_kg.storage.chain",
                 "cradle_kg.storage.sqlite", "cradle_kg.storage.opening",
                 "cradle_kg.loop.context", "cradle_kg.loop.approvals"))
    assert "demo.ledger.credit" in {t["id"] for t in json.loads(out)}
    assert imported == []


def test_runs_list_on_the_demo_home_imports_no_rdflib_or_graph(demo_home: Path) -> None:
    out, heavy = _imported_after("runs", "list", "--home", str(demo_home), "--format", "json")
    assert "run:task-credit" in {r["run_id"] for r in json.loads(out)}
    assert heavy == []


def test_tools_list_refuses_a_tool_whose_postcondition_shapes_do_not_compile(
        tmp_path: Path) -> None:
    """As ``Runtime.register_tool`` does: listing the tools checks their shapes."""
    import shutil

    from cradle_kg import Runtime
    from cradle_kg.errors import InputError
    from cradle_kg.packs.registry import BUILTIN_PACKS

    home = tmp_path / "home"
    pack = home / "packs" / "demo.ledger"
    shutil.copytree(BUILTIN_PACKS / "demo.ledger", pack,
                    ignore=shutil.ignore_patterns("__pycache__", "tests"))
    manifest = pack / "manifest.yaml"
    manifest.write_text(manifest.read_text("utf-8").replace("version: 1.0.0", "version: 9.0.0"),
                        "utf-8")
    tools = pack / "tools.py"
    text = tools.read_text("utf-8")
    assert "sh:targetNode <urn:cradle:observed> ;" in text
    tools.write_text(text.replace("sh:targetNode <urn:cradle:observed> ;",
                                  "sh:targetNode <urn:cradle:observed> ;;; ]", 1), "utf-8")
    (home / "config.json").write_text(json.dumps({"packs": ["demo.ledger@9.0.0"]}), "utf-8")
    done = cli("tools", "list", "--home", str(home))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "postcondition shapes do not compile" in done.stderr
    assert "demo.ledger.credit" in done.stderr and "Traceback" not in done.stderr
    with pytest.raises(InputError, match="postcondition shapes do not compile"):
        Runtime(home)


def test_demo_ledger_has_no_duplicate_effect(demo_home: Path) -> None:
    from cradle_kg.demo.scenario import ledger_entries

    assert set(ledger_entries(demo_home).values()) == {1}


def test_runs_and_tools_listings(demo_home: Path) -> None:
    runs = json.loads(cli("runs", "list", "--home", str(demo_home), "--format", "json").stdout)
    statuses = {r["run_id"]: r["status"] for r in runs}
    assert statuses["run:task-credit"] == "executed"
    assert statuses["run:task-big-credit"] == "denied"
    assert statuses["run:task-close"] == "executed"
    shown = cli("runs", "show", "run:task-close", "--home", str(demo_home), "--format", "json")
    kinds = [e["kind"] for e in json.loads(shown.stdout)["timeline"]]
    assert kinds.index("approval.requested") < kinds.index("approval.decided") < kinds.index(
        "action.intent") < kinds.index("transition.committed")
    tools = json.loads(cli("tools", "list", "--home", str(demo_home), "--format", "json").stdout)
    assert {t["id"] for t in tools} >= {"demo.ledger.credit", "demo.ledger.close_account"}
    assert cli("runs", "show", "run:nope", "--home", str(demo_home)).returncode == 2


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_export(name: str) -> None:
    done = cli("schema", name)
    assert done.returncode == 0
    assert json.loads(done.stdout)["title"]


def test_schema_unknown_name() -> None:
    done = cli("schema", "Nope")
    assert done.returncode == 2 and "no record named" in done.stderr


def test_the_console_entry_in_a_real_process() -> None:
    ok = process_cli("schema", "Proposal")
    assert ok.returncode == 0 and json.loads(ok.stdout)["title"]
    bad = process_cli("schema", "Nope")
    assert bad.returncode == 2 and "no record named" in bad.stderr and not bad.stdout


def test_the_console_entry_pauses_collection_only_while_the_command_line_loads() -> None:
    """``entry`` (the script, ``python -m cradle_kg``): importing ``cradle_kg.cli`` loads no
    typer, pydantic or rich (so the pause covers them); the command runs with the
    collector on again, the loaded modules frozen (issue 17)."""
    probe = ("import gc, sys\n"
             "import cradle_kg.cli\n"
             "early = sorted(m for m in sys.modules if m.split('.')[0] in "
             "('typer', 'pydantic', 'rich'))\n"
             "import cradle_kg.cli.core as core\n"
             "seen = []\n"
             "real = core.print_json\n"
             "core.print_json = lambda v: (seen.append(gc.isenabled()), real(v))[1]\n"
             "sys.argv = ['cradle-kg', 'schema', 'Proposal']\n"
             "try:\n    cradle_kg.cli.entry()\nexcept SystemExit as exc:\n    code = exc.code\n"
             "print('PROBE', early, seen, gc.isenabled(), gc.get_freeze_count() > 0, code,"
             " file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    line = [x for x in done.stderr.splitlines() if x.startswith("PROBE ")][-1]
    assert line == "PROBE [] [True] True True 0", done.stderr[-800:]
    assert json.loads(done.stdout)["title"]


def test_a_table_shows_emoji_codes_as_they_are() -> None:
    """A value is shown as it is: rich does not turn ``:smile:`` into an emoji (nor loads
    its table of codes)."""
    import io

    from cradle_kg.cli.common import LazyConsole, clean

    out = io.StringIO()
    LazyConsole(file=out, width=80).print(clean("id:smile:x"), highlight=False)
    assert out.getvalue() == "id:smile:x\n"


def _submit(home: Path, text: str) -> subprocess.CompletedProcess[str]:
    return cli("submit", "-", "--home", str(home), stdin=text)


def test_submit_exit_codes(demo_home: Path) -> None:
    ok = {"id": "cli-1", "task_id": "cli", "agent_id": "agent:ledger-assistant",
          "action": {"action_type": "demo.ledger.credit", "target": "ledger:c",
                     "arguments": {"account": "c", "amount": 2}}}
    done = _submit(demo_home, json.dumps(ok))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "executed"
    denied = {**ok, "id": "cli-2", "action": {**ok["action"], "arguments": {"account": "c",
                                                                             "amount": 9999}}}
    done = _submit(demo_home, json.dumps(denied))
    assert done.returncode == 1 and json.loads(done.stdout)["status"] == "denied"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "a proposal is a JSON object"),
        ('{"id": "x"}', "`task_id`"),
        ('{"id": "x", "task_id": "t", "agent_id": "a", "action": {"action_type": "t", '
         '"target": "r"}, "surprise": 1}', "`surprise`"),
        ('{"id": 5, "task_id": "t", "agent_id": "a", "action": {"action_type": "t", '
         '"target": "r"}}', "`id`"),
    ],
)
def test_submit_bad_input_exit_2_and_nothing_written(demo_home: Path, text: str,
                                                     needle: str) -> None:
    before = json.loads(cli("audit", "verify", "--home", str(demo_home), "--format",
                            "json").stdout)["events"]
    done = _submit(demo_home, text)
    assert done.returncode == 2
    assert needle in done.stderr
    assert "Traceback" not in done.stderr
    after = json.loads(cli("audit", "verify", "--home", str(demo_home), "--format",
                           "json").stdout)["events"]
    assert after == before


def test_missing_file_and_broken_policy_are_clean_errors(tmp_path: Path) -> None:
    done = cli("submit", str(tmp_path / "nope.json"), "--home", str(tmp_path / "h"))
    assert done.returncode == 2 and "cannot read" in done.stderr
    (tmp_path / "h" / "policies").mkdir(parents=True)
    (tmp_path / "h" / "policies" / "bad.cedar").write_text("permit(principal,")
    # a proposal that could be submitted: the home's broken policy is what refuses it
    (tmp_path / "p.json").write_text(json.dumps({
        "id": "p1", "task_id": "t1", "agent_id": "agent:ledger-assistant",
        "action": {"action_type": "demo.ledger.balance", "target": "ledger:a",
                   "arguments": {"account": "a"}}}))
    done = cli("submit", str(tmp_path / "p.json"), "--home", str(tmp_path / "h"))
    assert done.returncode == 2
    assert "bad.cedar" in done.stderr and "Traceback" not in done.stderr


def test_approvals_cli_refuses_self_approval_and_bad_token(tmp_path: Path) -> None:
    from cradle_kg import Runtime
    from cradle_kg.demo.scenario import DEMO_TOKENS, prepare_home

    home = tmp_path / "h"
    prepare_home(home)
    with Runtime(home) as rt:
        waiting = rt.submit({"id": "c", "task_id": "t", "agent_id": "agent:ledger-assistant",
                             "action": {"action_type": "demo.ledger.close_account",
                                        "target": "ledger:z", "arguments": {"account": "z"}}})
    assert waiting.approval is not None
    aid = waiting.approval.id
    # alice is the person the agent acts for: she may never approve its action
    done = cli("approvals", "approve", aid, "--as", "user:alice", "--home", str(home),
               env={"CRADLE_APPROVER_TOKEN": DEMO_TOKENS["user:alice"]})
    assert done.returncode == 1 and "cannot approve" in done.stderr
    done = cli("approvals", "approve", aid, "--as", "user:bob", "--home", str(home),
               env={"CRADLE_APPROVER_TOKEN": "wrong"})
    assert done.returncode == 1 and "does not authenticate" in done.stderr
    listed = json.loads(cli("approvals", "list", "--home", str(home), "--format", "json").stdout)
    assert [a["status"] for a in listed] == ["pending"]
