"""Every view of an approval says which version of the tool it covers, and warns when the
tool changed since it was asked for.

An approval covers the action under the tool's version its request's gate-1 decision
recorded (``tests/security/test_146``): approved under ``test.erase@1``, it covers nothing
once ``test.erase@2`` is registered, and the action asks a person again. Before, the inbox
(``GET /api/inbox``, ``cradle-kg inbox``, the web page), ``GET /api/approvals/{id}`` and
``cradle-kg approvals show`` never said which version the person was approving, nor that it
had changed: a person approved, and the action asked again for no reason they were shown.

Now each says ``tool``: ``asked`` (the request's ``tool_ref``), ``now`` (the version
registered now), ``changed`` and a plain ``note``. A stale approval can still be decided;
the answer says it covers nothing under the version now (the action asks again).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from cradle_kg import OutcomeStatus, Runtime
from cradle_kg.cli import app, common
from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.inbox import inbox
from cradle_kg.server.api import make_router

from .conftest import Clock, proposal
from .security.test_146_approval_tool_version import TESTER, _Home

pytestmark = pytest.mark.usefixtures("journal_backend")

STALE_NOTE = ("asked under `test.erase@1`; the tool is now `test.erase@2`: approving covers "
              "only `test.erase@1`, so the action will ask a person again under `test.erase@2`")
SAME = {"asked": "test.erase@1", "now": "test.erase@1", "changed": False, "note": None}
STALE = {"asked": "test.erase@1", "now": "test.erase@2", "changed": True, "note": STALE_NOTE}
AUTH = {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}


@pytest.fixture
def place(home: Path, clock: Clock) -> Iterator[_Home]:
    from .conftest import make_config

    (home / "config.json").write_text(make_config().model_dump_json())
    yield _Home(home, clock)


def _asked(place: _Home) -> str:
    """An erase asked for under `test.erase@1`, left pending; its approval's id."""
    rt = place.runtime("1")
    try:
        out = rt.submit(proposal("p1", "test.erase", {"value": "all"}, agent=TESTER,
                                 target="test:all"))
        assert out.status is OutcomeStatus.AWAITING_APPROVAL and out.approval is not None
        return out.approval.id
    finally:
        rt.close()


def _client(rt: Runtime) -> TestClient:
    api = FastAPI()
    api.state.runtime = rt
    api.include_router(make_router(rt))
    return TestClient(api)


def _get(client: TestClient, path: str, **params: Any) -> Any:
    answer = client.get(path, params=params, headers=AUTH)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_inbox_says_the_version_an_approval_covers(place: _Home) -> None:
    approval_id = _asked(place)
    for version, expected in (("1", SAME), ("2", STALE)):
        rt = place.runtime(version)
        try:
            [item] = inbox(rt)
            assert item.id == approval_id and item.tool == expected, item.tool
            with _client(rt) as client:
                [shown] = _get(client, "/api/inbox")
                assert shown["tool"] == expected
                assert _get(client, f"/api/approvals/{approval_id}")["tool"] == expected
                page = _get(client, "/api/runs/" + item.run_id + "/view")
                assert [i["tool"] for i in page["inbox"]] == [expected]
        finally:
            rt.close()


def test_a_stale_approval_can_be_decided_and_the_answer_says_it_covers_nothing_now(
        place: _Home) -> None:
    approval_id = _asked(place)
    place.clock.now += timedelta(minutes=5)  # a decision asked again is another decision
    rt = place.runtime("2")  # the pack upgraded while the approval waited
    try:
        with _client(rt) as client:
            answer = client.post(f"/api/approvals/{approval_id}/approve", json={},
                                 headers=AUTH)
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert body["approval"]["status"] == "approved"
            assert body["tool"] == STALE
            # covered nothing under @2: the run went on and asked a person again
            assert body["outcome"]["status"] == "awaiting_approval", body["outcome"]
            assert place.calls == []
            [again] = _get(client, "/api/inbox")
            assert again["id"] != approval_id
            assert again["tool"] == {**SAME, "asked": "test.erase@2", "now": "test.erase@2"}
    finally:
        rt.close()


def _cli(place: _Home, version: str | None, monkeypatch: pytest.MonkeyPatch,
         *args: str) -> Any:
    """A CLI command on the home; ``version``: the tool the command's runtime registers
    (the CLI registers a home's packs, and this tool is registered by the test)."""
    if version is not None:
        for module in ("cradle_kg.cli.approvals", "cradle_kg.cli.inbox"):
            monkeypatch.setattr(f"{module}.open_runtime", lambda home, **_: place.runtime(version))
    # the consoles are made on first use, with the width of that moment: made again in the
    # command, under its COLUMNS (another test of this process may have made them narrow)
    for made in (common.console, common.err_console):
        monkeypatch.setattr(made, "_real", None)
    return CliRunner().invoke(app, [*args, "--home", str(place.home)], env={"COLUMNS": "400"})


def test_the_cli_says_the_version_and_warns_when_it_changed(
        place: _Home, monkeypatch: pytest.MonkeyPatch) -> None:
    approval_id = _asked(place)
    # a runtime that does not hold the tool now: the version asked under, nothing to compare
    out = _cli(place, None, monkeypatch, "approvals", "show", approval_id)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["tool"] == {"asked": "test.erase@1", "now": None,
                                               "changed": False, "note": None}
    out = _cli(place, "1", monkeypatch, "approvals", "show", approval_id)
    assert json.loads(out.stdout)["tool"] == SAME and "warning" not in out.stderr
    out = _cli(place, "2", monkeypatch, "approvals", "show", approval_id)
    assert json.loads(out.stdout)["tool"] == STALE
    assert "warning: " + STALE_NOTE in " ".join(out.stderr.split())

    out = _cli(place, "2", monkeypatch, "inbox", "--format", "json")
    assert [i["tool"] for i in json.loads(out.stdout)] == [STALE]
    table = _cli(place, "2", monkeypatch, "inbox")
    said = " ".join(table.output.split())
    assert "test.erase@1" in said and "WARNING" in said, table.output
    table = _cli(place, "1", monkeypatch, "inbox")
    assert "test.erase@1" in table.output and "WARNING" not in table.output

    place.clock.now += timedelta(minutes=5)
    decided = _cli(place, "2", monkeypatch, "approvals", "approve", approval_id,
                   "--as", APPROVER, "--token", DEMO_TOKENS[APPROVER])
    assert decided.exit_code == 0, decided.output
    said = " ".join(decided.stdout.split())
    assert "approved by" in said and "(for `test.erase@1`)" in said, said
    assert "warning: " + STALE_NOTE in said
    assert "continued: awaiting_approval" in said
    assert place.calls == []


def test_the_approvals_list_says_the_version_each_covers(
        place: _Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """``approvals list`` showed no tool: a person scanning the list could not see that an
    approval was asked under a version that is no longer registered."""
    approval_id = _asked(place)
    for version, expected, cell in (("1", SAME, "test.erase@1"),
                                    ("2", STALE, "test.erase@1 (now test.erase@2)")):
        out = _cli(place, version, monkeypatch, "approvals", "list", "--format", "json")
        assert out.exit_code == 0, out.output
        [listed] = json.loads(out.stdout)
        assert listed["id"] == approval_id and listed["tool"] == expected
        table = _cli(place, version, monkeypatch, "approvals", "list")
        assert table.exit_code == 0, table.output
        assert cell in table.output, table.output
    assert "(now" not in _cli(place, "1", monkeypatch, "approvals", "list").output
