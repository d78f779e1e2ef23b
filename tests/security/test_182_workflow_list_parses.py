"""Listing the home's workflows parses each file once, not once a request.

Finding (twelfth attack review; left open by the eleventh): ``GET /api/workflows`` answers
any token, an agent's too, and it parsed every workflow file of the home at every request
— YAML, the contracts' JSON Schemas made into models, every check: about 12 ms of CPU for
``credit-review.yaml`` (1.3 KB) on this project's machines, up to ~0.9 s for a file at the
256 KiB limit (``test_166``) — under the JSON API's lock, holding the process's GIL. An
agent's token asking for the list in a loop kept the lock busy with the operator's files:
every submission, approval and answer of every identity waited behind it. The same parse ran
again for each read of a run (``GET /api/workflows/runs/{run}``, the run's page, the inbox):
a run's workflow is read from its recorded file (``file:PATH#HASH``) each time.

Now a parsed workflow file is kept, per process, under its name and what it is — its
resolved path and the hash of its bytes (``definition``): the file is still read and
hashed at every request (an edited file is seen at once, and a run whose file changed is
still refused: ``test_168``), but the same bytes are parsed once (64 files kept; a file
that does not load is kept as its problems). The measure is the parses counted, not time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg.demo.scenario import AGENT
from cradle_kg.loop.runtime import Runtime
from cradle_kg.server.api import make_router
from cradle_kg.server.auth import issue_agent_token
from cradle_kg.workflow import definitions

FLOWS = Path(__file__).resolve().parents[2] / "examples" / "workflows"


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files the YAML parser read, as it reads them."""
    seen: list[str] = []
    parse: Callable[..., Any] = definitions._parse

    def counted(text: str, name: str) -> Any:
        seen.append(Path(name).name)
        return parse(text, name)

    monkeypatch.setattr(definitions, "_parse", counted)
    return seen


def test_the_list_parses_each_file_once(ledger_home: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = ledger_home / "workflows"
    folder.mkdir()
    for path in FLOWS.glob("*.yaml"):
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "broken.yaml").write_text("workflow: broken\nsteps: 3\n", encoding="utf-8")
    seen = _counted(monkeypatch)
    with Runtime(ledger_home, graph_sync=False) as rt:
        auth = {"Authorization": f"Bearer {issue_agent_token(rt.home, rt.config, AGENT)}"}
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            def listed() -> dict[str, bool]:
                answer = client.get("/api/workflows", headers=auth)
                assert answer.status_code == 200, answer.text
                return {w["id"]: w["valid"] for w in answer.json()}

            first = listed()
            assert first == {"broken": False, "credit-review": True,
                             "message-triage": True}, first
            assert sorted(seen) == ["broken.yaml", "credit-review.yaml",
                                    "message-triage.yaml"]
            for _ in range(5):
                assert listed() == first
            assert len(seen) == 3, seen  # before: 18, three files at each of six requests

            # an edited file is read as it is now
            path = folder / "credit-review.yaml"
            path.write_text(path.read_text(encoding="utf-8").replace(
                "workflow: credit-review", "workflow: credit-review-2"), encoding="utf-8")
            assert listed() == {**{k: v for k, v in first.items() if k != "credit-review"},
                                "credit-review-2": True}
            assert len(seen) == 4, seen
            answer = client.get("/api/workflows", headers=auth).json()
            broken = next(w for w in answer if w["id"] == "broken")
            assert broken["problems"] and "broken.yaml" in broken["problems"][0], broken
            assert len(seen) == 4, seen
