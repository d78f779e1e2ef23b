"""The public surface: `__all__` is pinned, and the README's Python example runs as shown."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import cradle_kg

README = Path(__file__).resolve().parents[1] / "README.md"

PINNED = {
    "AbortPolicy", "ActionRequest", "CradleError", "IdempotencyClass", "Outcome",
    "OutcomeStatus", "Plan", "PlanOutcome", "PlanStep", "Proposal", "RiskLevel", "Runtime",
    "RuntimeDecision", "SideEffectClass", "ToolCall", "ToolRefused", "ToolSpec", "Verdict",
    "VerificationCheck", "VerificationResult", "VerificationStatus", "VerifierReport",
    "VerifyRequest", "__version__",
}


def test_all_is_pinned() -> None:
    assert set(cradle_kg.__all__) == PINNED
    for name in cradle_kg.__all__:
        assert hasattr(cradle_kg, name), name


def test_readme_python_example_runs_as_shown() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"## Using it from Python\n\n```python\n(.*?)```", text, re.S)
    assert block is not None
    code = block.group(1)
    expected = re.search(r"# -> (.*)", code)
    assert expected is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue().strip() == expected.group(1).strip()


def test_every_cli_command_is_documented_in_the_readme() -> None:
    from typer.main import get_command

    from cradle_kg.cli import app

    text = README.read_text(encoding="utf-8")
    group = get_command(app)
    for name in group.commands:  # type: ignore[attr-defined]
        assert f"cradle-kg {name}" in text or f"cradle-kg {name} " in text, name


def test_every_command_accepts_home() -> None:
    from typer.main import get_command

    from cradle_kg.cli import app

    missing: list[str] = []

    def walk(cmd: object, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
            return
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}  # type: ignore[attr-defined]
        if "--home" not in opts:
            missing.append(" ".join(path))

    walk(get_command(app), [])
    assert missing == []


def test_each_command_loads_only_its_own_module_and_the_table_is_complete() -> None:
    """`cradle-kg X` builds the command line from X's module alone (start-up time): the
    table that says which module holds X must name every command, each once."""
    from typer.main import get_command

    from cradle_kg.cli import COMMANDS, MODULES, build_app

    everything = set(get_command(build_app()).commands)  # type: ignore[attr-defined]
    assert everything == set(COMMANDS)
    for module in MODULES:
        own = set(get_command(build_app((module,))).commands)  # type: ignore[attr-defined]
        assert own == {c for c, m in COMMANDS.items() if m == module}, module


def test_a_light_command_imports_no_graph_shacl_or_server() -> None:
    from .heavy_imports import HEAVY_ROOTS, imported_after

    _out, heavy = imported_after(["schema", "Proposal"], roots=(*HEAVY_ROOTS, "pyoxigraph"),
                                 modules=("cradle_kg.loop.runtime", "cradle_kg.graph.store"))
    assert heavy == []


def test_the_version_is_printed_without_loading_a_command() -> None:
    """`cradle-kg --version` (before: `No such option`, exit 2, after importing every
    command's module: 0.78 s) prints the package's version and loads no command module."""
    from cradle_kg import __version__

    from .heavy_imports import HEAVY_ROOTS, imported_after

    out, loaded = imported_after(["--version"], roots=(*HEAVY_ROOTS, "pyoxigraph", "rich"),
                                 prefix="cradle_kg.cli.", suffixes=("",))
    assert out == f"cradle-kg {__version__}\n"
    assert loaded == []
