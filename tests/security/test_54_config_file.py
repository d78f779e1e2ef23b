"""The home's ``config.json`` edited by hand (or merged, or generated elsewhere).

Findings:

* **a key written twice: the last one was in force.** ``config.json`` was read with
  ``json.loads``: a configuration whose ``limits`` allow the agent no call, followed further
  down by a second ``"limits": []`` (a bad merge, or a change made to slip past a reviewer
  who reads the first), ran the call. Every key written twice is now refused, in one
  ``error:`` line naming the key and the file, by the runtime's strict loader
  (:func:`cradle_kg.inputs.load_json_file`); nothing is decided.
* **a broken file was an "unexpected" crash.** Bytes that are not UTF-8 and a 100,000-deep
  value ended every command with ``error: unexpected UnicodeDecodeError`` /
  ``RecursionError``, and ``"verification_max_age_seconds": 1e16`` (or any number of
  seconds past what a date can hold) with ``unexpected OverflowError``; each is now a typed
  one-line refusal naming the file (and the key), exit 2. The durations are bounded at
  load: at most 100 years, none negative.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .inputcli import cli, credit, fresh_home

NO_CALLS = '"limits": [{"scope": "agent", "window_seconds": 60, "max_calls": 0}]'


def _submit(home: Path, tmp_path: Path) -> tuple[int, str, str]:
    proposal = tmp_path / "proposal.json"
    proposal.write_text(json.dumps(credit("p-1")), encoding="utf-8")
    done = cli("submit", str(proposal), "--home", str(home))
    return done.returncode, done.stdout, done.stderr


def _with(home: Path, members: str) -> None:
    """The demo's configuration, its own ``limits`` dropped, with ``members`` appended as
    written (raw JSON text)."""
    config = json.loads((home / "config.json").read_text(encoding="utf-8"))
    config.pop("limits", None)
    text = json.dumps(config, indent=2)
    (home / "config.json").write_text(text[:-2] + ",\n  " + members + "\n}", encoding="utf-8")


def test_the_control_no_calls_is_in_force(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    _with(home, NO_CALLS)
    code, out, err = _submit(home, tmp_path)
    assert code == 1, err  # submit's exit for an outcome that is not executed
    assert json.loads(out)["status"] == "denied"


def test_a_key_written_twice_is_refused_not_the_last_one_in_force(tmp_path: Path) -> None:
    home = fresh_home(tmp_path / "home")
    _with(home, NO_CALLS + ',\n  "limits": []')
    code, out, err = _submit(home, tmp_path)
    assert code == 2, out  # before: 0, "executed" under the second, empty `limits`
    assert err.startswith("error: ") and "duplicate key `limits`" in err, err
    assert "config.json" in err and out == ""


@pytest.mark.parametrize(("name", "text", "words"), [
    ("not UTF-8", b'{"repair_budget": 3, "packs": ["demo.ledger\xff"]}', "not valid UTF-8"),
    ("100,000 deep", b'{"packs": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deep"),
])
def test_a_broken_file_is_a_typed_refusal(tmp_path: Path, name: str, text: bytes,
                                          words: str) -> None:
    home = fresh_home(tmp_path / "home")
    (home / "config.json").write_bytes(text)
    code, out, err = _submit(home, tmp_path)
    assert code == 2, out
    assert err.startswith("error: ") and words in err and "config.json" in err, err
    assert "unexpected" not in err and "Traceback" not in err


@pytest.mark.parametrize("member", [
    '"verification_max_age_seconds": 1e16',
    '"evidence_max_age_seconds": 100000000000000000',
    '"limits": [{"scope": "agent", "window_seconds": 1000000000000, "max_calls": 5}]',
])
def test_a_duration_no_date_can_hold_is_refused_at_load(tmp_path: Path, member: str) -> None:
    home = fresh_home(tmp_path / "home")
    _with(home, member)
    code, out, err = _submit(home, tmp_path)
    assert code == 2, out  # before: "unexpected OverflowError", or every call denied
    key = member.split('"')[1] if "limits" not in member else "window_seconds"
    assert err.startswith("error: ") and key in err and "config.json" in err, err
    assert "unexpected" not in err
