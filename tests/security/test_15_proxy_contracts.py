"""Item 15: the MCP proxy's contracts file (``cradle-kg mcp proxy --contracts``).

The contracts are what the operator declares an upstream tool does; the proxy trusts
them. Attacks that broke it: a second ``side_effect:`` (or a tool declared twice) further
down the file silently replaced the first — a reviewer reads ``irreversible``, the proxy
serves ``read_only``; a template ``{id:>999999999}`` passed the start-up check (its field
is an argument) and built a gigabyte target on each call; a file nested 20,000 deep or
not UTF-8 was a traceback. Attacks that hold: YAML bombs and cycles, ``!!python`` tags.
Each refusal is one ``file:line: message``; the CLI exits 2 before any upstream starts.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from cradle_kg.errors import ContractsError
from cradle_kg.integrations.contracts import MAX_CONTRACTS_BYTES, load_contracts

from .inputcli import cli

GOOD = ("tools:\n  append:\n    side_effect: reversible\n    target: 'test:{id}'\n"
        "    verify: {tool: read, arguments: {id: '{id}'}}\n")


def _laughs(levels: int = 9) -> str:
    """A billion laughs: each anchor is nine of the previous (9**9 leaves if expanded)."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + ("\ntools:\n  t:\n    side_effect: read_only\n"
                               f"    description: *l{levels - 1}\n")


#: (name, file content, 1-based line the message names or None, a word of the message)
HOSTILE: list[tuple[str, str | bytes, int | None, str]] = [
    ("side_effect given twice (downgrade)",
     "tools:\n  wipe:\n    side_effect: irreversible\n    target: 'n:{id}'\n"
     "    verify: {tool: read}\n    side_effect: read_only\n", 6, "twice"),
    ("tool declared twice",
     GOOD + "  append:\n    side_effect: read_only\n", 6, "twice"),
    ("verify argument given twice",
     "tools:\n  a:\n    side_effect: reversible\n    target: 't:{id}'\n    verify:\n"
     "      tool: read\n      arguments: {id: '{id}', id: 'admin'}\n", 7, "twice"),
    ("20,000-deep flow", "tools: " + "[" * 20_000 + "]" * 20_000 + "\n", 1, "deep"),
    ("300-deep block", "".join("  " * i + f"k{i}:\n" for i in range(300)), None, "deep"),
    ("not UTF-8", b"tools:\n  t:\n    side_effect: read_only\n    description: \xff\xfe\n",
     4, "utf-8"),
    ("format spec bomb", GOOD.replace("'test:{id}'", "'test:{id:>999999999}'"), 2,
     "placeholder"),
    ("attribute in a template", GOOD.replace("'test:{id}'", "'test:{id.__class__}'"), 2,
     "placeholder"),
    ("index in a verify template", GOOD.replace("id: '{id}'", "id: '{id[0]}'"), 2,
     "placeholder"),
    ("positional placeholder", GOOD.replace("'test:{id}'", "'test:{}'"), 2, "placeholder"),
    ("billion laughs", _laughs(), None, "valid string"),
    ("a cycle", "tools: {t: {side_effect: read_only, description: &c [*c]}}\n", None,
     "valid string"),
    ("python tag", "tools: !!python/object/apply:os.system ['echo pwned']\n", 1, "tag"),
]


@pytest.mark.parametrize(("name", "text", "line", "word"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_contracts_file_is_one_located_refusal(
        tmp_path: Path, name: str, text: str | bytes, line: int | None, word: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    started = time.monotonic()
    with pytest.raises(ContractsError) as refused:
        load_contracts(path)
    assert time.monotonic() - started < 5, name
    message = str(refused.value)
    assert word in message.lower(), message
    if line is not None:
        assert message.startswith(f"{path}:{line}:"), message


def test_an_oversized_contracts_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(GOOD + "# " + "x" * MAX_CONTRACTS_BYTES + "\n")
    with pytest.raises(ContractsError, match="larger than"):
        load_contracts(path)


def test_a_merge_key_may_still_be_overridden_on_purpose(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("tools:\n  a: &base {side_effect: read_only, description: one}\n"
                    "  b: {<<: *base, description: two}\n")
    loaded = load_contracts(path)
    assert loaded.tools["b"].description == "two"


def test_the_cli_refuses_a_downgraded_contract_before_starting_the_upstream(
        tmp_path: Path) -> None:
    marker = tmp_path / "upstream-started"
    path = tmp_path / "c.yaml"
    path.write_text("tools:\n  wipe:\n    side_effect: irreversible\n    target: 'n:{id}'\n"
                    "    verify: {tool: read}\n    side_effect: read_only\n")
    done = cli("mcp", "proxy", "--home", str(tmp_path / "home"), "--agent", "agent:x",
               "--contracts", str(path), "--", sys.executable, "-c",
               f"open({str(marker)!r}, 'w')")
    assert done.returncode == 2, done.stderr
    first = done.stderr.strip().splitlines()[0]
    assert "c.yaml:6:" in first and "twice" in first, done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists()
