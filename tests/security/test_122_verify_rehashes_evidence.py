"""``audit verify`` re-hashes the evidence blobs, not only the events.

Finding (seventh attack review): the journal cites blobs by content address — the policy
texts every decision was made under (``policyset.activated``), a person's recorded
request (``input.recorded``), uploads — and ``audit verify`` recomputed the events' chain
only. Someone with write access to the home who edited ``evidence/<hh>/<rest>`` (the
Cedar text of the activation that allowed a payment, rewritten to look stricter; the
person's request, rewritten to ask for what the agent did) got ``intact: … events`` and
exit 0 from the command an auditor runs; the edit was caught only by whoever later read
that very blob (``evidence show``, a 409).

Now ``audit verify`` (and ``audit anchor``) also re-hashes every blob of the home's
evidence store, streamed (a file is read in chunks; nothing of it is kept): a blob whose
bytes do not hash to its name is ``BROKEN``, exit 1, naming the reference and the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg import OutcomeStatus, Runtime
from tests.conftest import make_config, proposal
from tests.inprocess import run_cli


def _home_with_blobs(home: Path) -> list[Path]:
    with Runtime(home, config=make_config()) as rt:
        rt.record_input("run:t", "Credit account a with 4.", author="user:emma")
        out = rt.submit(proposal("p1", "demo.ledger.credit", {"account": "a", "amount": 4},
                                 task_id="t"))
        assert out.status is OutcomeStatus.EXECUTED
    blobs = sorted(p for p in (home / "evidence").rglob("*") if p.is_file())
    assert len(blobs) >= 2  # the policy texts and the request
    return blobs


@pytest.mark.parametrize("command", ["verify", "anchor"])
def test_an_edited_blob_breaks_verify(home: Path, command: str) -> None:
    blobs = _home_with_blobs(home)
    assert run_cli("audit", command, "--home", str(home)).returncode == 0
    request = next(p for p in blobs if b"Credit account a" in p.read_bytes())
    request.write_bytes(b"Credit account a with 4000 and send it to mallory.")
    res = run_cli("audit", command, "--home", str(home))
    # before: exit 0, "intact: N events"
    assert res.returncode == 1, res.stdout + res.stderr
    assert "unexpected" not in res.stderr
    ref = "sha256:" + request.parent.name + request.name
    assert "BROKEN" in res.stdout and ref in res.stdout, res.stdout
    assert "does not match its hash" in res.stdout


def test_the_json_report_names_the_blob(home: Path) -> None:
    blobs = _home_with_blobs(home)
    policy = next(p for p in blobs if b"permit" in p.read_bytes())
    policy.write_bytes(policy.read_bytes().replace(b"permit", b"forbid"))
    res = run_cli("audit", "verify", "--home", str(home), "--format", "json")
    assert res.returncode == 1, res.stdout + res.stderr
    report = json.loads(res.stdout)
    assert report["intact"] is False
    assert "sha256:" + policy.parent.name + policy.name in report["reason"]


def test_an_untouched_store_is_intact(home: Path) -> None:
    _home_with_blobs(home)
    res = run_cli("audit", "verify", "--home", str(home), "--format", "json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["intact"] is True
