"""A template airline database loaded once from the benchmark's data; each test gets a fresh
home whose database is a copy of it (a real SQLite file), with the pack loaded."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cradle_kg.packs import testing

PACK = testing.pack_folder(__file__)


def pytest_configure(config: pytest.Config) -> None:
    # `cradle-kg pack test` runs these tests on their own (the pack's folder as rootdir,
    # without the repository's pyproject), where the suite's `slow` marker is unknown
    config.addinivalue_line("markers", "slow: long-running tests (the reference replay)")


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``airline.sqlite`` loaded from the shared benchmark data (never copied into the repo)."""
    home = tmp_path_factory.mktemp("airline-template") / "home"
    # only its database is copied into the tests' homes: its journal and graph stay
    # embedded whatever backend the suite runs on (``--journal-backend``, ``--graph-backend``)
    with pytest.MonkeyPatch.context() as env:
        env.delenv("CRADLE_JOURNAL_URL", raising=False)
        env.delenv("CRADLE_GRAPH_URL", raising=False)
        with testing.pack_home(PACK, home) as h:
            db = h.entry("db:AirlineDB")
            data = h.entry("db:default_data")()
            assert (data / "reservations.json").is_file(), \
                f"the benchmark data is not at {data}"
            db(h.entry("db:db_path")(home)).load(data, h.entry("db:DEFAULT_NOW"))
            return Path(h.entry("db:db_path")(home))


class Airline:
    def __init__(self, home: testing.PackHome) -> None:
        self.home = home
        self.runner = home.entry("examples_runner:run_example")
        self.proposal = home.entry("examples_runner:proposal")
        self.db = home.entry("db:AirlineDB")(home.entry("db:db_path")(home.root))

    def run(self, call: dict[str, Any], **expect: Any) -> dict[str, Any]:
        out: dict[str, Any] = self.runner(self.home.runtime, {"call": call, "expect": expect})
        assert out["as_expected"], json.dumps(out, indent=2)[:3000]
        return out


@pytest.fixture
def airline(template: Path, tmp_path: Path) -> Iterator[Airline]:
    home = tmp_path / "home"
    target = home / "travel-airline" / "airline.sqlite"
    target.parent.mkdir(parents=True)
    shutil.copyfile(template, target)
    identities = _identities()
    with testing.pack_home(PACK, home, config=identities) as h:
        yield Airline(h)


def _identities() -> Any:
    from cradle_kg.packs.sdk import Agent, Permission, RuntimeConfig

    agent = "agent:airline-assistant"
    return RuntimeConfig(agents=(Agent(id=agent, role="airline-assistant"),),
                         permissions=tuple(Permission(subject=agent, action_type="airline.*",
                                                      resource_selector=t)
                                           for t in ("reservation:*", "customer:*",
                                                     "airline:*")))
