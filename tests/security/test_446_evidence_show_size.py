"""``cradle-kg evidence show`` says the size of the blob it re-hashed.

Finding: since ``test_360`` the blob is re-hashed in chunks and read whole only for
``--raw``, but the table still printed the length of the bytes read: every blob was
shown as ``sha256:…: 0 bytes, intact`` — a 2,731-byte document of the demo too. An
auditor was told that the evidence a decision rests on is empty.

Now: the line gives the size the re-hash found (the JSON view already did).
"""

from __future__ import annotations

import json
from pathlib import Path

from cradle_kg import Runtime
from cradle_kg.demo.scenario import prepare_home
from tests.inprocess import run_cli

DOCUMENT = b"Invoice 2026-114: 3 drones, EUR 41,250.00, due 2026-02-01.\n" * 20


def test_the_size_shown_is_the_blobs(tmp_path: Path) -> None:
    root = tmp_path / "home"
    prepare_home(root)
    rt = Runtime(root)
    ref = rt.add_evidence(DOCUMENT, kind="invoice", collector="user:alice")
    rt.close()
    done = run_cli("evidence", "show", ref, "--home", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == f"{ref}: {len(DOCUMENT)} bytes, intact"
    done = run_cli("evidence", "show", ref, "--home", str(root), "--format", "json")
    assert json.loads(done.stdout)["bytes"] == len(DOCUMENT)
