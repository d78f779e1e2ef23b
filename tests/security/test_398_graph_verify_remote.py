"""``graph verify`` against a remote store (a real ``oxigraph serve``): the same check.

A remote store is written by whoever can reach its update endpoint: a quad inserted there
read as intact, since nothing compared it with the journal. ``graph verify`` reads each
graph of the remote store (one Graph Store GET each) and compares it with the journal's
projection as it does for the embedded store. Fails before: no such command (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cradle_kg.demo.scenario import run_demo
from cradle_kg.storage.graph_config import GRAPH_URL_ENV
from cradle_kg.storage.opening import JOURNAL_URL_ENV
from cradle_kg.storage.sparql_scratch import ScratchOxigraph
from tests import oneshot
from tests.inprocess import run_cli


def test_an_update_through_the_remote_endpoint_is_named(
        fresh_oxigraph: ScratchOxigraph, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GRAPH_URL_ENV, fresh_oxigraph.setting())
    monkeypatch.delenv(JOURNAL_URL_ENV, raising=False)
    home = tmp_path / "home"
    run_demo(home, pilots=False)  # its runtime leaves the remote store at the head
    done = run_cli("graph", "verify", "--home", str(home), "--format", "json")
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["equal"] is True, done.stdout + done.stderr
    assert report["graphs"] > 1 and report["events"] > 0
    run = "https://w3id.org/cradle/run/run%3Atask-credit"
    response = oneshot.post(fresh_oxigraph.endpoints().update, data={"update": (
        f"INSERT DATA {{ GRAPH <{run}> {{ <urn:forged> <urn:p> \"x\" }} }}")})
    assert response.status_code < 300
    done = run_cli("graph", "verify", "--home", str(home))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"graph <{run}>: " in done.stdout
    assert f'+ <urn:forged> <urn:p> "x" <{run}> .' in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
