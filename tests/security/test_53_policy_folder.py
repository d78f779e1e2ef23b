"""The home's policy folder (``<home>/policies``): what is in it, and what is in force.

Findings:

* **a forbid in a subfolder was not in force, silently.** The folder's policies were its
  ``*.cedar`` files, read with ``glob("*.cedar")``: an operator who files a rule under
  ``policies/payments/no-credit.cedar`` (or receives a folder laid out that way), or names
  it ``NO-CREDIT.CEDAR``, saw every command run without it — the demo's credit the forbid
  names was executed. A policy file the loader would not read now refuses the policy set:
  one ``error:`` line naming the file, exit 2, nothing executed (fail closed).
* **a FIFO named ``*.cedar`` hung every command.** ``read_text`` on it blocks until some
  process writes: ``submit`` never answered. Only a regular file is read now; anything
  else is the same one-line refusal.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.racers import CLI, run_python

from .inputcli import credit, fresh_home

FORBID = '@id("no-credit")\nforbid (principal, action == Action::"demo.ledger.credit", resource);\n'


def _submit(home: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps(credit("p-1")), encoding="utf-8")
    # a deadline well past a command's run: it ends only a command that hangs; the command
    # in a process of its own, forked from the fork server (no interpreter start)
    return run_python(CLI, ["submit", str(proposal), "--home", str(home)], env=os.environ,
                      cwd=os.getcwd(), timeout=60)


def _where(policies: Path, layout: str) -> None:
    if layout == "subfolder":
        (policies / "payments").mkdir()
        (policies / "payments" / "no-credit.cedar").write_text(FORBID, encoding="utf-8")
    elif layout == "deeper":
        (policies / "teams" / "payments").mkdir(parents=True)
        (policies / "teams" / "payments" / "no-credit.cedar").write_text(FORBID,
                                                                         encoding="utf-8")
    elif layout == "linked-subfolder":
        elsewhere = policies.parent / "shared-policies"
        elsewhere.mkdir()
        (elsewhere / "no-credit.cedar").write_text(FORBID, encoding="utf-8")
        os.symlink(elsewhere, policies / "shared")
    else:
        (policies / "NO-CREDIT.CEDAR").write_text(FORBID, encoding="utf-8")


@pytest.mark.parametrize("layout", ["subfolder", "deeper", "linked-subfolder", "upper-case"])
def test_a_forbid_the_folder_would_not_read_refuses_the_policy_set(
        tmp_path: Path, layout: str) -> None:
    home = fresh_home(tmp_path / "home")
    _where(home / "policies", layout)
    done = _submit(home, tmp_path)
    assert done.returncode == 2, done.stdout  # before: 0, "executed"
    assert done.stderr.startswith("error: ") and "no-credit.cedar" in done.stderr.lower()
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # no outcome: the call was never decided, let alone run


def test_the_same_forbid_in_the_folder_is_in_force(tmp_path: Path) -> None:
    """The control: moved up into the folder, the rule denies the call."""
    home = fresh_home(tmp_path / "home")
    (home / "policies" / "no-credit.cedar").write_text(FORBID, encoding="utf-8")
    done = _submit(home, tmp_path)
    assert json.loads(done.stdout)["status"] == "denied", done.stdout


def test_a_fifo_named_like_a_policy_is_refused_not_waited_on(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    os.mkfifo(home / "policies" / "incoming.cedar")
    try:
        done = _submit(home, tmp_path)
    except subprocess.TimeoutExpired:  # before: blocked in read_text until killed
        pytest.fail("submit hung on a FIFO in the policies folder")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "not a regular file" in done.stderr


def test_a_folder_too_big_to_check_is_refused_not_walked(tmp_path: Path) -> None:
    """A link in the policies folder to a big tree (a checkout, ``/``) is not walked at each
    open: past ``MAX_FOLDER_ENTRIES`` the policy set is refused, one line naming the folder."""
    from cradle_kg.policy.cedar import MAX_FOLDER_ENTRIES

    home = fresh_home(tmp_path / "home")
    big = tmp_path / "checkout"
    big.mkdir()
    for i in range(MAX_FOLDER_ENTRIES + 1):
        (big / f"f{i}").touch()
    os.symlink(big, home / "policies" / "vendor")
    done = _submit(home, tmp_path)
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith("error: ") and "more than 10,000 entries" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_subfolder_it_may_not_list_is_refused(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """What a subfolder it cannot list holds is unknown: a PolicyError, not a traceback
    (the listing fails in process: this suite runs as root, who may list any folder)."""
    from cradle_kg.errors import PolicyError
    from cradle_kg.policy.cedar import read_sources

    policies = tmp_path / "policies"
    (policies / "private").mkdir(parents=True)
    (policies / "ok.cedar").write_text(FORBID, encoding="utf-8")
    listing = Path.iterdir

    def refused(self: Path) -> object:
        if self.name == "private":
            raise PermissionError(13, "Permission denied", str(self))
        return listing(self)

    monkeypatch.setattr(Path, "iterdir", refused)
    with pytest.raises(PolicyError, match="cannot read the policies folder"):
        read_sources([policies])
