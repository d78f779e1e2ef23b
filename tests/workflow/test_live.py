"""Live replay: a changed policy flips exactly the decisions it governs."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import cradle_kg
from cradle_kg.cli import app
from cradle_kg.storage.opening import open_home_journal
from cradle_kg.workflow import LiveSettings, live_replay
from tests.golden.generate import GOLDEN, load

DEMO_POLICY = Path(cradle_kg.__file__).parent / "demo" / "policies" / "demo.cedar"
NEW_LIMIT = 100


def _tightened(tmp_path: Path) -> Path:
    text = DEMO_POLICY.read_text()
    assert "amount > 1000" in text
    folder = tmp_path / "new-policies"
    folder.mkdir()
    (folder / "demo.cedar").write_text(text.replace("amount > 1000", f"amount > {NEW_LIMIT}"))
    return folder


def _governed(home: Path) -> dict[str, int]:
    """Submissions the changed clause governs: credits above the new limit, up to the old."""
    counts: dict[str, int] = {}
    with open_home_journal(home) as journal:
        for ev in journal.events_of_kind("proposal.received"):
            action = ev.payload["proposal"]["action"]
            amount = action["arguments"].get("amount", 0)
            if action["action_type"] == "demo.ledger.credit" and NEW_LIMIT < amount <= 1000:
                counts[ev.subject] = counts.get(ev.subject, 0) + 1
    return counts


def test_changed_policy_flips_exactly_the_governed_decisions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    load(GOLDEN / "demo", home)
    report = live_replay(home, [], LiveSettings(policies=_tightened(tmp_path)))
    flipped = [c for c in report.changes if c.category == "decision"]
    expected = _governed(home)
    assert expected  # the demo has such a credit, or this test proves nothing
    assert {c.subject for c in flipped} == set(expected)
    for subject, n in expected.items():
        mine = [c for c in flipped if c.subject == subject]
        assert len(mine) == n
        assert all((c.recorded, c.replayed) == ("allow", "deny") for c in mine)
    assert report.totals["decision"] == sum(expected.values())
    assert report.totals["runs_changed"] == len({c.run_id for c in flipped})


@pytest.mark.parametrize("name", ["demo", "invoice_triage"])
def test_same_inputs_same_policies_change_nothing(tmp_path: Path, name: str) -> None:
    home = tmp_path / name
    load(GOLDEN / name, home)
    report = live_replay(home, [], LiveSettings())
    assert report.changes == [], name


def test_replay_cli_exit_codes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    load(GOLDEN / "demo", home)
    runner = CliRunner()
    strict = runner.invoke(app, ["replay", "--strict", "--home", str(home)])
    assert strict.exit_code == 0, strict.output
    live = runner.invoke(app, ["replay", "--live", "--policies", str(_tightened(tmp_path)),
                               "--home", str(home), "--format", "json"])
    assert live.exit_code == 1
    assert f'"decision": {sum(_governed(home).values())}' in live.output
    neither = runner.invoke(app, ["replay", "--home", str(home)])
    assert neither.exit_code == 2
    unknown = runner.invoke(app, ["replay", "run:nope", "--strict", "--home", str(home)])
    assert unknown.exit_code == 2
