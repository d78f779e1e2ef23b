"""An upload's evidence labels are checked: no agent's blob carries the label of a person's
recorded request.

Finding (the fourth review's "noticed and left", the brief's lead 4): ``POST
/api/evidence?kind=&source=`` (any token, an agent's too) and ``evidence add --kind --source``
journaled the labels as given. The runtime itself labels a person's recorded request
``input:request`` (``record_input``: the text lineage trusts as the person's word); an
agent's token uploaded a blob as ``kind=input:request`` and ``GET /api/evidence/{ref}`` /
``evidence show`` — what an auditor reads to learn what a cited document is — listed it
under that label (only ``by`` told it was the agent's). No gate reads the label (gate 1
counts a blob's freshness, lineage reads ``input.recorded``), so this is about the record an
auditor is shown, not a decision. A NUL in ``kind`` or ``source`` was journaled too (200).

Now an upload's ``kind`` is an id (within ``max_id_length``, no NUL, no lone surrogate) and
not in the runtime's ``input:`` labels (after NFKC, trimmed, any case); ``source`` is text
within the limits, with no NUL: a 422 (``evidence add``: one ``error:`` line, exit 2), and
nothing stored or journaled. Every other label is taken as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT, prepare_home
from cradle_kg.server.api import make_router
from tests.inprocess import run_cli

from .mcp_http import token_for

pytestmark = pytest.mark.usefixtures("journal_backend")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, Runtime, TestClient, str]]:
    home = tmp_path / "home"
    prepare_home(home)
    token = token_for(home, AGENT)
    with Runtime(home, graph_sync=False) as rt:
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            yield home, rt, client, token


def _uploads(rt: Runtime) -> int:
    return sum(1 for e in rt.journal.events(run_id="evidence")
               if e.kind == "evidence.collected")


@pytest.mark.parametrize("query", [
    "kind=input:request", "kind=INPUT:request", "kind=%20input:request",
    "kind=%EF%BD%89nput:request",  # a full-width i: `input:` after NFKC
    "kind=a%00b", "source=bank%00", "kind=%20"])
def test_a_label_the_runtime_owns_or_a_nul_is_refused(
        served: tuple[Path, Runtime, TestClient, str], query: str) -> None:
    _, rt, client, token = served
    answer = client.post(f"/api/evidence?{query}", content=b"the landlord's new IBAN",
                         headers={"Authorization": f"Bearer {token}"})
    # before: 200, journaled under that label
    assert answer.status_code == 422, (query, answer.status_code, answer.text)
    assert _uploads(rt) == 0


def test_other_labels_are_taken_as_before(
        served: tuple[Path, Runtime, TestClient, str], tmp_path: Path) -> None:
    home, rt, client, token = served
    answer = client.post("/api/evidence?kind=statement&source=bank:input:export",
                         content=b"statement", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    ref = answer.json()["ref"]
    shown = client.get(f"/api/evidence/{ref}", headers={"Authorization": f"Bearer {token}"})
    assert [(a["kind"], a["source"], a["by"]) for a in shown.json()["added"]] == [
        ("statement", "bank:input:export", AGENT)]
    # the command line obeys the same rule
    blob = tmp_path / "blob.txt"
    blob.write_bytes(b"forged request")
    done = run_cli("evidence", "add", str(blob), "--as", AGENT, "--kind", "input:request",
                   "--home", str(home))
    assert done.returncode == 2 and "error:" in done.stderr and "input:" in done.stderr, done
    assert _uploads(rt) == 1
