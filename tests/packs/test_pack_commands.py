"""``pack validate`` and ``pack test``: the pilots pass; broken copies fail with file:line.

``pack validate`` and the refusals run in this process (:func:`in_process`: the command's
report is the point; the OWL check still starts its Java reasoner); ``pack test`` of a
valid pack stays a real process started from another directory, as a user runs it.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.inprocess import run_cli

from .conftest import PILOTS, cli, copy_pack, pack_dir


def in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``cradle-kg ARGS`` in this process, as wide as :func:`cli` makes it."""
    return run_cli(*args, env={"COLUMNS": "300"})


@pytest.mark.parametrize("pack_id", [*PILOTS, "demo.ledger"])
def test_pilot_validates(pack_id: str) -> None:
    done = in_process("pack", "validate", str(pack_dir(pack_id)), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"ok": true' in done.stdout


_MARKER_TEST = """
import os
from pathlib import Path


def test_runs_in_an_isolated_home() -> None:
    Path(os.environ["PACK_TEST_MARKER"]).write_text(os.environ["CRADLE_HOME"] + "\\n" + os.getcwd())
    assert {ok}
"""


@pytest.mark.slow
@pytest.mark.parametrize(("pack_id", "ok"), [(PILOTS[0], True), (PILOTS[1], True),
                                             ("demo.ledger", True), ("demo.ledger", False)])
def test_pack_test_runs_the_pack_tests_from_any_directory(pack_id: str, ok: bool,
                                                          tmp_path: Path) -> None:
    """``pack test`` runs the pack's own tests in an isolated home and says how they went.

    The pack's real suites already run once in ``./dev test`` (``testpaths``): here a copy
    carries one test of its own that records where it ran (and passes or fails)."""
    pack = copy_pack(pack_id, tmp_path / "packs" / pack_id)
    for old in (pack / "tests").glob("test_*.py"):
        old.unlink()
    (pack / "tests" / "test_marker.py").write_text(_MARKER_TEST.format(ok=ok), encoding="utf-8")
    marker = tmp_path / "marker.txt"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # a relative folder, from another working directory: the command runs pytest elsewhere
    done = cli("pack", "test", str(Path("..") / "packs" / pack_id), cwd=elsewhere,
               env={"PACK_TEST_MARKER": str(marker)}, timeout=900)
    out = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == (0 if ok else 1), out
    assert ("tests passed" if ok else "tests FAILED") in done.stdout, out
    home, cwd = marker.read_text(encoding="utf-8").splitlines()
    assert Path(home).name == "home" and not Path(home).exists()  # a fresh home, removed
    assert Path(cwd) not in (elsewhere, pack) and not Path(cwd).exists()


@pytest.mark.slow
def test_pack_test_runs_under_the_packs_configuration_not_the_folders_above(
        tmp_path: Path) -> None:
    """A pack inside a repository: pytest looked for its configuration upwards from the
    tests and ran them under the repository's (its ``addopts``, its plugins) — `pack test`
    of every pack of this repository, run from it, failed with ``Error importing plugin``;
    and a pack whose tests import each other relatively (``from .conftest import …``, as
    `travel.airline`'s do) could not be collected outside this repository's suite."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "-p no_such_plugin_anywhere"\n', encoding="utf-8")
    pack = copy_pack("demo.ledger", repo / "packs" / "demo.ledger")
    for old in (pack / "tests").glob("test_*.py"):  # a copy's own tests load the built-ins
        old.unlink()
    (pack / "tests" / "conftest.py").write_text("SHARED = 7\n", encoding="utf-8")
    (pack / "tests" / "test_relative.py").write_text(
        "from .conftest import SHARED\n\n\ndef test_shared() -> None:\n"
        "    assert SHARED == 7\n", encoding="utf-8")
    done = cli("pack", "test", str(Path("packs") / "demo.ledger"), cwd=repo, timeout=900)
    out = done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode == 0 and "tests passed" in done.stdout, out
    assert "1 passed" in out, out


def _append(path: Path, text: str) -> int:
    """Append ``text`` to ``path``; the line number where it starts."""
    before = path.read_text(encoding="utf-8")
    if not before.endswith("\n"):
        before += "\n"
    path.write_text(before + text, encoding="utf-8")
    return before.count("\n") + 1


def _bad_turtle(pack: Path) -> tuple[str, int]:
    (ontology,) = sorted((pack / "ontology").glob("*.ttl"))
    line = _append(ontology, "\n<https://example.org/a> <https://example.org/b> \"unclosed .\n")
    return ontology.name, line + 1


def _missing_file(pack: Path) -> tuple[str, int]:
    manifest = pack / "manifest.yaml"
    text = manifest.read_text(encoding="utf-8")
    lines = text.splitlines()
    index = next(i for i, ln in enumerate(lines) if ln.startswith("shapes:"))
    lines.insert(index + 1, "  - shapes/no-such-shapes.ttl")
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return "manifest.yaml", index + 2


def _policy_off_schema(pack: Path) -> tuple[str, int]:
    (policy,) = sorted((pack / "policies").glob("*.cedar"))
    tool = "customs.classify" if "customs" in pack.name else "infra.deploy"
    line = _append(policy, f'\n@id("broken-on-purpose")\npermit (principal, action == '
                           f'Action::"{tool}", resource)\nwhen {{ context.no_such_field }};\n')
    return policy.name, line + 1


BREAKAGES: dict[str, Callable[[Path], tuple[str, int]]] = {
    "bad-turtle": _bad_turtle,
    "missing-file": _missing_file,
    "policy-off-schema": _policy_off_schema,
}


@pytest.mark.parametrize("pack_id", PILOTS)
@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
@pytest.mark.parametrize("command", ["validate", "test"])
def test_broken_copy_fails_with_file_and_line(pack_id: str, breakage: str, command: str,
                                              tmp_path: Path) -> None:
    pack = copy_pack(pack_id, tmp_path / pack_id)
    name, line = BREAKAGES[breakage](pack)
    done = in_process("pack", command, str(pack))
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    found = re.findall(rf"{re.escape(name)}:(\d+)", out.replace("\n", ""))
    assert found, out
    assert int(found[0]) == line, out
    assert "INVALID" in out or "error" in out


def test_the_unbroken_copy_is_valid(tmp_path: Path) -> None:
    """The copies differ from the pilots only by what each test breaks."""
    pack = copy_pack("customs.hs-router", tmp_path / "customs.hs-router")
    done = in_process("pack", "validate", str(pack), "--no-reasoner")
    assert done.returncode == 0, done.stdout + done.stderr
