"""``compose.yaml`` (the production shape, README "Production shape: compose.yaml") is not
run here — no container engine runs on these machines — but what it names must exist:
every ``cradle-kg`` command and option it runs, the services it promises, the variables
that select the shared journal and graph store, and no secret written in the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def test_the_services_of_the_production_shape() -> None:
    services = _compose()["services"]
    assert {"postgres", "graph", "migrate", "worker", "projector", "serve"} <= set(services)
    assert services["worker"]["deploy"]["replicas"] > 1
    for name in ("migrate", "worker", "projector", "serve"):
        env = services[name]["environment"]
        assert env["CRADLE_JOURNAL_URL"].startswith("postgresql://cradle:${CRADLE_DB_PASSWORD")
        assert env["CRADLE_GRAPH_URL"] == "http://graph:7878"
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith("${")


def test_every_cradle_command_it_runs_exists() -> None:
    commands = [s["command"] for s in _compose()["services"].values()
                if s.get("command") and s["command"][0] == "cradle-kg"]
    assert len(commands) == 4
    for command in commands:
        words: list[str] = []
        for word in command[1:]:  # the command and sub-command: the words before options
            if word.startswith("-"):
                break
            words.append(word)
        helped = run_cli(*words, "--help")
        assert helped.returncode == 0, (command, helped.stderr)
        for option in (w for w in command[1:] if w.startswith("--")):
            assert option in helped.stdout, (command, option)
