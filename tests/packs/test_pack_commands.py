"""``pack validate`` and ``pack test``: the pilots pass; broken copies fail with file:line."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import PILOTS, cli, copy_pack, pack_dir


@pytest.mark.parametrize("pack_id", [*PILOTS, "demo.ledger"])
def test_pilot_validates(pack_id: str) -> None:
    done = cli("pack", "validate", str(pack_dir(pack_id)), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"ok": true' in done.stdout


@pytest.mark.parametrize("pack_id", [*PILOTS, "demo.ledger"])
def test_pilot_pack_test_passes_from_any_directory(pack_id: str, tmp_path: Path) -> None:
    # a relative folder, from another working directory: the command runs pytest elsewhere
    done = cli("pack", "test", str(Path("..") / "packs" / pack_id),
               cwd=pack_dir(pack_id).parent.parent / "tests", timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "tests passed" in done.stdout


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
    done = cli("pack", command, str(pack))
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    found = re.findall(rf"{re.escape(name)}:(\d+)", out.replace("\n", ""))
    assert found, out
    assert int(found[0]) == line, out
    assert "INVALID" in out or "error" in out


def test_the_unbroken_copy_is_valid(tmp_path: Path) -> None:
    """The copies differ from the pilots only by what each test breaks."""
    pack = copy_pack("customs.hs-router", tmp_path / "customs.hs-router")
    done = cli("pack", "validate", str(pack), "--no-reasoner")
    assert done.returncode == 0, done.stdout + done.stderr
