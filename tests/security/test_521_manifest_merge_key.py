"""A YAML merge key (``<<:``) in a pack's manifest.

Finding: the strict loader refuses a key given twice in one mapping (``test_57``: a second
``policies: []`` dropped a pack's forbid) but let merge keys through, its one intended
repetition (``<<: *base`` then an override, for workflow files). With aliases refused in a
manifest, a merge there can only inline mappings, and ``<<: [{policies: []}, {policies:
[no-credit.cedar]}]`` gave ``policies`` two values with no error: YAML keeps the first, so
the pack loaded without the forbid a reviewer reads on the same line, and ``pack
validate`` said ``valid``. The same list in a contract of the MCP proxy was read the same.
Now: a manifest refuses a merge key outright (one ``error:`` line naming the manifest and
its line; ``pack validate`` INVALID), and everywhere the strict loader reads, a key given
by two of the mappings one ``<<`` merges is refused like a key given twice; an explicit key
over a merged one (the override) is read as before.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from cradle_kg import strict_yaml
from cradle_kg.errors import ManifestError, WorkflowFileError
from cradle_kg.packs.manifest import read_manifest
from cradle_kg.packs.registry import BUILTIN_PACKS
from cradle_kg.strict_yaml import StrictLoader, YamlRefused
from cradle_kg.workflow.definitions import parse_definition
from tests.inprocess import run_cli

FORBID = '@id("no-credit")\nforbid (principal, action == Action::"demo.ledger.credit", resource);\n'


def _pack(tmp_path: Path, tail: str) -> Path:
    pack = tmp_path / "ledger"
    shutil.copytree(BUILTIN_PACKS / "demo.ledger", pack,
                    ignore=shutil.ignore_patterns("__pycache__", "tests"))
    (pack / "no-credit.cedar").write_text(FORBID, encoding="utf-8")
    manifest = pack / "manifest.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8") + tail, encoding="utf-8")
    return pack


MERGED_TWICE = "<<: [{policies: []}, {policies: [no-credit.cedar]}]\n"


def test_a_manifest_key_given_twice_through_a_merge_is_refused(tmp_path: Path) -> None:
    pack = _pack(tmp_path, MERGED_TWICE)
    with pytest.raises(ManifestError) as caught:
        manifest = read_manifest(pack)
        pytest.fail(f"read with policies={manifest.policies!r}")
    lines = len((pack / "manifest.yaml").read_text(encoding="utf-8").splitlines())
    assert f"manifest.yaml:{lines}:" in caught.value.message, caught.value.message
    done = run_cli("pack", "validate", str(pack), "--no-reasoner")
    assert done.returncode == 1 and "INVALID" in done.stdout, done.stdout + done.stderr


def test_a_manifest_refuses_any_merge_key(tmp_path: Path) -> None:
    pack = _pack(tmp_path, "<<: {policies: [no-credit.cedar]}\n")
    with pytest.raises(ManifestError, match="merge key"):
        read_manifest(pack)


@pytest.mark.parametrize("text", [
    "<<: [{a: 1}, {a: 2}]\n",
    "x:\n  <<: [{side_effect: read}, {b: 1}, {side_effect: write}]\n",
])
def test_two_merged_mappings_giving_one_key_are_refused(text: str) -> None:
    for load in (strict_yaml.load, lambda t: yaml.load(t, Loader=StrictLoader)):
        with pytest.raises(YamlRefused, match="given twice"):
            load(text)


WORKFLOW = Path(__file__).resolve().parents[2] / "examples" / "workflows" / "credit-review.yaml"


def test_a_workflow_file_refuses_a_merge_key() -> None:
    """Anchors are refused in a workflow file, so a merge there could only inline mappings:
    ``maximum`` of the credit step's schema given by two of them was one of the two."""
    text = WORKFLOW.read_text(encoding="utf-8")
    merged = text.replace("amount: {type: integer, minimum: 1, maximum: 1000}",
                          "amount: {type: integer, minimum: 1, "
                          "<<: [{maximum: 1000000}, {maximum: 1000}]}")
    assert merged != text
    parse_definition(text, name="credit-review.yaml", definition="t")  # the control
    with pytest.raises(WorkflowFileError, match="merge key"):
        parse_definition(merged, name="credit-review.yaml", definition="t")


def test_an_override_of_a_merged_key_is_still_read() -> None:
    text = "base: &b {k: 1, j: 3}\nother:\n  <<: [*b, {m: 4}]\n  k: 2\n"
    assert strict_yaml.load(text)["other"] == {"k": 2, "j": 3, "m": 4}
