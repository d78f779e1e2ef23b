"""A key given twice in a pack's ``manifest.yaml`` (and in a model recording).

Findings:

* **a second ``policies:`` dropped the pack's forbid policies: an allow by accident.** The
  manifest was read by PyYAML's safe loader, which keeps the last value of a key given
  twice: a pack whose manifest lists its forbid policy and, further down, ``policies: []``
  (a bad merge, or an edit made to slip past a reviewer who reads the first) was loaded
  with no policy, and the credit the forbid names was executed; ``pack validate`` — the
  review step for a pack one does not trust yet — said ``valid``. The manifest is now
  read by the one strict YAML loader (:mod:`cradle_kg.strict_yaml`, that of the MCP
  proxy's contracts): one ``error:`` line naming the manifest, the line and the key; the
  runtime does not open (exit 2, nothing decided) and ``pack validate`` says ``INVALID``.
  The manifest is read as a regular file of at most 256 KiB (a FIFO named
  ``manifest.yaml`` blocks no more than it did: it was, and is, no pack at all).
* **a model recording kept the last of two keys.** :meth:`RecordedClient.from_file` read
  its file with ``json.loads``: a second ``"responses"`` replaced the first. It now goes
  through the strict loader (:func:`cradle_kg.inputs.load_json_file`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cradle_kg.errors import InputError
from cradle_kg.packs.registry import BUILTIN_PACKS

from .inputcli import assert_refused, cli, credit, fresh_home, received

FORBID = '@id("no-credit")\nforbid (principal, action == Action::"demo.ledger.credit", resource);\n'


def _home_with_pack(tmp_path: Path, tail: str) -> Path:
    """The demo home, its ledger pack installed at 1.0.1 with a forbid policy on credits,
    ``tail`` appended to its manifest as written."""
    home = fresh_home(tmp_path / "home")
    pack = home / "packs" / "ledger"
    shutil.copytree(BUILTIN_PACKS / "demo.ledger", pack)
    (pack / "no-credit.cedar").write_text(FORBID, encoding="utf-8")
    manifest = pack / "manifest.yaml"
    text = manifest.read_text(encoding="utf-8").replace("version: 1.0.0", "version: 1.0.1")
    manifest.write_text(text + "policies:\n  - no-credit.cedar\n" + tail, encoding="utf-8")
    return home


def _submit(home: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps(credit("p-1")), encoding="utf-8")
    return cli("submit", str(proposal), "--home", str(home))


def test_the_control_the_packs_forbid_is_in_force(tmp_path: Path) -> None:
    home = _home_with_pack(tmp_path, "")
    done = _submit(home, tmp_path)
    assert done.returncode == 1, done.stderr  # submit's exit for an outcome not executed
    assert json.loads(done.stdout)["status"] == "denied"


def test_a_second_policies_key_is_refused_not_the_last_one_in_force(tmp_path: Path) -> None:
    home = _home_with_pack(tmp_path, "policies: []\n")
    done = _submit(home, tmp_path)
    # before: exit 0, "executed": the forbid policy was dropped
    assert_refused(done, "`policies` is given twice", "manifest.yaml")
    assert done.stdout == "" and received(home) == 0


def test_pack_validate_says_a_second_key_is_invalid(tmp_path: Path) -> None:
    home = _home_with_pack(tmp_path, "policies: []\n")
    done = cli("pack", "validate", str(home / "packs" / "ledger"), "--no-reasoner",
               "--format", "json")
    # before: exit 0, "valid": the review step read the manifest the loader would
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert "`policies` is given twice" in " ".join(report["errors"]), report


def test_a_model_recording_with_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    from cradle_kg.workflow.model import RecordedClient

    one = '{"model": "m", "content": "pay"}'
    path = tmp_path / "recording.json"
    path.write_text(f'{{"label": "r", "responses": [{one}], "responses": []}}',
                    encoding="utf-8")
    with pytest.raises(InputError, match="duplicate key `responses`"):
        RecordedClient.from_file(path)  # before: loaded with no response


@pytest.mark.parametrize("kind", ["twice", "fifo"])
def test_pack_validate_reads_a_packs_examples_strictly(tmp_path: Path, kind: str) -> None:
    """The examples a pack lists are read as the runtime reads JSON: a key given twice is
    an error, not the last copy; a FIFO among them is refused, not waited on (before:
    ``valid`` for the first, a hang for the second)."""
    home = _home_with_pack(tmp_path, "examples:\n  - examples/one.json\n")
    example = home / "packs" / "ledger" / "examples" / "one.json"
    example.parent.mkdir()
    if kind == "twice":
        example.write_text('{"id": "p1", "id": "p2"}', encoding="utf-8")
    else:
        os.mkfifo(example)
    done = cli("pack", "validate", str(home / "packs" / "ledger"), "--no-reasoner",
               "--format", "json", timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    errors = " ".join(json.loads(done.stdout)["errors"])
    assert "one.json: not a JSON example" in errors, errors
    assert ("duplicate key `id`" if kind == "twice" else "not a regular file") in errors, errors
