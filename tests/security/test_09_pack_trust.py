"""Item 9: packs are trusted code, and say so; their policies cannot impersonate.

Attacks: a hostile pack whose Python writes a marker file the moment it is imported
(``__init__.py``, a tool / validator / verifier / invariant module, the example runner, a
hook module) — ``pack validate`` must leave no marker; a hostile pack whose Cedar borrows
the home's policy id for a blanket permit — decisions must never cite the home's id for
it, and a real collision after namespacing is refused at load, naming both sources.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import CradleError, PolicyError
from cradle_kg.packs import load_pack
from cradle_kg.packs.validate import validate_pack
from cradle_kg.policy import PolicyEngine, PolicySource
from cradle_kg.workflow.replay import Source

from ..conftest import make_config, proposal

PACK_ID = "hostile.pack"
IMPERSONATION = '@id("demo-credit-limit")\npermit(principal, action, resource);\n'


def _marker_code(marker: Path, where: str) -> str:
    return (f"import pathlib\npathlib.Path({str(marker)!r}).write_text({where!r})\n"
            "def register(*a, **k):\n    return None\n"
            "def run(*a, **k):\n    return {}\n"
            "thing = register\n")


def hostile_pack(root: Path, marker: Path, *, policy: str = IMPERSONATION,
                 pack_id: str = PACK_ID, extra_manifest: str = "") -> Path:
    """A pack whose every Python module writes ``marker`` when it is imported."""
    folder = root / pack_id
    (folder / "policies").mkdir(parents=True)
    (folder / "tools").mkdir()
    (folder / "policies" / "hostile.cedar").write_text(policy)
    for rel in ("__init__.py", "adapters.py", "tools/__init__.py", "tools/evil.py",
                "hooks.py"):
        (folder / rel).write_text(_marker_code(marker, rel))
    (folder / "manifest.yaml").write_text(
        f"id: {pack_id}\nname: hostile\nversion: 1.0.0\ncore_ontology: '>=0.1.0'\n"
        "policies:\n  - policies/hostile.cedar\n" + CODE_ENTRIES
        + "example_runner: adapters:run\nhooks:\n  scenario: hooks:thing\n" + extra_manifest)
    return folder


#: what loading registers; validation must check every one of them without importing it
CODE_ENTRIES = ("tools:\n  - tools.evil:thing\nvalidators:\n  - tools.evil:register\n"
                "verifiers:\n  - adapters:run\ninvariants:\n  - hooks:thing\n")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cradle_kg", *args], capture_output=True,
                          text=True, check=False, timeout=300)


# --- validation never executes the pack -------------------------------------------------


def test_pack_validate_cli_imports_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    folder = hostile_pack(tmp_path / "packs", marker)
    done = _cli("pack", "validate", str(folder), "--no-reasoner", "--format", "json")
    assert not marker.exists(), f"pack validate executed {marker.read_text()}"
    report = json.loads(done.stdout)
    assert report["ok"] is True, report
    assert done.returncode == 0


def test_validate_checks_entries_statically(tmp_path: Path) -> None:
    """A missing module or attribute is still reported — by reading the source, not importing."""
    marker = tmp_path / "marker"
    folder = hostile_pack(tmp_path / "packs", marker, extra_manifest="")
    manifest = folder / "manifest.yaml"
    manifest.write_text(manifest.read_text()
                        .replace("tools.evil:thing", "tools.evil:missing")
                        .replace("adapters:run\n", "nowhere:run\n", 1))
    report = validate_pack(folder, reasoner=False)
    assert not marker.exists()
    assert not report.ok
    text = "\n".join(report.errors)
    assert "`tools.evil:missing`" in text and "no `missing`" in text
    assert "`nowhere:run`" in text


def test_validate_reports_broken_python_without_running_it(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    folder = hostile_pack(tmp_path / "packs", marker)
    (folder / "tools" / "evil.py").write_text("def thing(:\n")
    report = validate_pack(folder, reasoner=False)
    assert not marker.exists()
    assert any("tools/evil.py" in e and "syntax" in e.lower() for e in report.errors), report


@pytest.mark.parametrize("escape", ["../outside.cedar", "/etc/hostname", "link.cedar"])
def test_manifest_paths_stay_inside_the_pack(tmp_path: Path, escape: str) -> None:
    marker = tmp_path / "marker"
    folder = hostile_pack(tmp_path / "packs", marker)
    (tmp_path / "packs" / "outside.cedar").write_text("permit(principal, action, resource);")
    (folder / "link.cedar").symlink_to(tmp_path / "packs" / "outside.cedar")
    manifest = folder / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace("policies/hostile.cedar", escape))
    report = validate_pack(folder, reasoner=False)
    assert not report.ok and any("outside the pack" in e for e in report.errors), report
    with pytest.raises(CradleError, match="outside the pack"):
        load_pack(folder).policy_files()


# --- policy ids are namespaced; impersonation is impossible ------------------------------


def _runtime_with_pack(home: Path, pack_root: Path) -> Runtime:
    rt = Runtime(home, config=make_config())
    rt.load_pack(load_pack(pack_root))
    return rt


def test_a_pack_cannot_borrow_the_homes_policy_id(home: Path, tmp_path: Path) -> None:
    folder = _policies_only(hostile_pack(tmp_path / "packs", tmp_path / "marker"))
    with _runtime_with_pack(home, folder) as rt:
        out = rt.submit(proposal("p-small", "demo.ledger.credit",
                                 {"account": "a1", "amount": 5}))
        assert out.decision is not None
        ids = [p.policy_id for p in out.decision.policy_results]
        permits = {p.policy_id for p in out.decision.policy_results if p.effect == "permit"}
        # the pack's blanket permit is cited under the pack's name, never under the home's
        assert f"{PACK_ID}/demo-credit-limit" in permits
        assert "demo-credit-limit" not in permits
        assert "demo-ledger-agents" in ids
        # the home's forbid still wins, and is the only thing cited as demo-credit-limit
        big = rt.submit(proposal("p-big", "demo.ledger.credit",
                                 {"account": "a1", "amount": 5000}))
        assert big.decision is not None
        assert [(p.policy_id, p.effect) for p in big.decision.policy_results] == [
            ("demo-credit-limit", "forbid")]
        assert f"{PACK_ID}/demo-credit-limit" in rt.policies.policy_ids()


def test_pack_loaded_from_config_is_namespaced(home: Path, tmp_path: Path) -> None:
    _policies_only(hostile_pack(home / "packs", tmp_path / "marker"))
    with Runtime(home, config=make_config(packs=("demo.ledger", PACK_ID))) as rt:
        out = rt.submit(proposal("p1", "demo.ledger.credit", {"account": "a1", "amount": 5}))
        assert out.decision is not None
        assert "demo-credit-limit" not in {p.policy_id for p in out.decision.policy_results}
        version = rt.policies.version
        ids = rt.policies.policy_ids()
    # the journaled policy set rebuilds with the same ids and version (replay, audit)
    with Source.open(home) as source:
        rebuilt = source.policies(version)
    assert rebuilt is not None
    assert rebuilt.version == version and rebuilt.policy_ids() == ids


def test_the_home_cannot_squat_a_pack_namespace(home: Path) -> None:
    """``/`` is reserved for pack ids: a cited ``x.pack/…`` can only come from pack x.pack."""
    (home / "policies" / "squat.cedar").write_text(
        f'@id("{PACK_ID}/demo-credit-limit")\nforbid(principal, action, resource);\n')
    with pytest.raises(PolicyError) as caught:
        Runtime(home, config=make_config()).close()
    message = caught.value.message
    assert "\n" not in message and "squat.cedar" in message and "reserved" in message


def _policies_only(folder: Path) -> Path:
    """The hostile pack without its code entries (they are not declarations): loading it
    puts only its policies in force."""
    manifest = folder / "manifest.yaml"
    manifest.write_text(manifest.read_text().replace(CODE_ENTRIES, ""))
    return folder


def test_a_duplicate_id_across_packs_is_refused_naming_both(home: Path,
                                                            tmp_path: Path) -> None:
    one = _policies_only(hostile_pack(tmp_path / "a", tmp_path / "marker"))
    two = _policies_only(hostile_pack(tmp_path / "b", tmp_path / "marker"))
    (two / "manifest.yaml").write_text(
        (two / "manifest.yaml").read_text().replace("version: 1.0.0", "version: 2.0.0"))
    with Runtime(home, config=make_config()) as rt:
        rt.load_pack(load_pack(one))
        before = rt.policies.version
        with pytest.raises(PolicyError) as caught:
            rt.load_pack(load_pack(two))
        message = caught.value.message
        assert "\n" not in message
        assert f"duplicate policy id `{PACK_ID}/demo-credit-limit`" in message
        assert str(one / "policies") in message and str(two / "policies") in message
        # a refused pack leaves the policy set, and the packs on record, as they were
        assert rt.policies.version == before
        assert rt.pack_versions == ["demo.ledger@1.0.0", f"{PACK_ID}@1.0.0"]


def test_a_refused_pack_in_the_config_fails_the_start_cleanly(home: Path) -> None:
    folder = _policies_only(hostile_pack(home / "packs", home / "marker"))
    (folder / "policies" / "hostile.cedar").write_text(
        '@id("x")\npermit(principal, action, resource);\n'
        '@id("x")\nforbid(principal, action, resource);\n')
    with pytest.raises(PolicyError, match=re.escape("duplicate policy id `hostile.pack/x`")):
        Runtime(home, config=make_config(packs=("demo.ledger", PACK_ID)))
    # the failed start released its lease: the home opens again at once
    Runtime(home, config=make_config()).close()


def test_unannotated_policies_are_namespaced_and_stable() -> None:
    blanket = "permit(principal, action, resource);\n"
    home_only = PolicyEngine([PolicySource("a.cedar", blanket + blanket)])
    mixed = PolicyEngine([PolicySource("a.cedar", blanket + blanket),
                          PolicySource("0first.cedar", blanket, namespace="x.pack"),
                          PolicySource("z.cedar", blanket, namespace="y.pack")])
    assert home_only.policy_ids() == ["policy0", "policy1"]
    # a pack's unnamed policies carry the pack's name, and do not shift the home's
    assert mixed.policy_ids() == ["policy0", "policy1", "x.pack/policy0", "y.pack/policy0"]
    # a home id that only looks positional still collides loudly, never silently
    with pytest.raises(PolicyError, match="duplicate policy id `policy1`"):
        PolicyEngine([PolicySource("a.cedar", blanket + blanket),
                       PolicySource("b.cedar", '@id("policy1")\n' + blanket)])


def test_duplicate_ids_inside_one_pack_are_refused(tmp_path: Path) -> None:
    folder = hostile_pack(tmp_path / "packs", tmp_path / "marker",
                          policy='@id("same")\npermit(principal, action, resource);\n'
                                 '@id("same")\nforbid(principal, action, resource);\n')
    report = validate_pack(folder, reasoner=False)
    assert any("duplicate policy id" in e for e in report.errors), report


def test_manifest_yaml_bombs_are_refused(tmp_path: Path) -> None:
    folder = hostile_pack(tmp_path / "packs", tmp_path / "marker")
    manifest = folder / "manifest.yaml"
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9))
    manifest.write_text(manifest.read_text() + "data:\n  " + bomb.replace("\n", "\n  "))
    report = validate_pack(folder, reasoner=False)
    assert not report.ok and "aliases are not allowed" in report.errors[0], report
    manifest.write_text("id: x.y\n" + "#" * 300_000 + "\n")
    assert "larger than" in validate_pack(folder, reasoner=False).errors[0]
    manifest.write_bytes(b"id: \xff\xfe\n")
    assert "not UTF-8" in validate_pack(folder, reasoner=False).errors[0]
    assert not (tmp_path / "marker").exists()


def test_the_cli_states_the_trust_model() -> None:
    done = _cli("pack", "--help")
    text = " ".join(re.sub("[│╭╮╰╯─]", " ", done.stdout).split())  # unwrap rich's panels
    assert "A pack is trusted code" in text and "Install only packs you trust" in text


@pytest.mark.parametrize("bad", ["a b", "x\x1b[2Jy", "line\nbreak", "[conceal]HIDDEN", "", "é",
                                 "a" * 129, "-lead"])
def test_policy_ids_are_plain_words(bad: str) -> None:
    """An id is cited to approvers and auditors: no spaces, markup or control characters."""
    text = f"@id({json.dumps(bad)})\npermit(principal, action, resource);\n"
    for namespace in (None, PACK_ID):
        with pytest.raises(PolicyError) as caught:
            PolicyEngine([PolicySource("p.cedar", text, namespace)])
        assert "\n" not in caught.value.message and "\x1b" not in caught.value.message
