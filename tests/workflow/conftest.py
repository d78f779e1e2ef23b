"""Fixtures of the workflow tests: a demo home with an autonomy admin, recorded clients."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cradle_kg import Runtime
from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, save_config
from cradle_kg.demo.scenario import demo_config, prepare_home
from cradle_kg.workflow import ModelResponse, RecordedClient

ADMIN, ADMIN_TOKEN = "user:root", "root-token"


@pytest.fixture
def wf_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    prepare_home(home)
    config = demo_config()
    save_config(home / "config.json", config.model_copy(update={"approvers": (
        *config.approvers, Approver(id=ADMIN, role="admin", token_hash=token_hash(ADMIN_TOKEN)))}))
    return home


@pytest.fixture
def wf_rt(wf_home: Path) -> Iterator[Runtime]:
    rt = Runtime(wf_home, graph_sync=False)
    yield rt
    rt.close()


def recorded(*contents: str, model: str = "qwen2.5-0.5b-instruct") -> RecordedClient:
    """A recorded client answering these contents in order (labelled as recorded)."""
    return RecordedClient([ModelResponse(model=model, content=c, source="recorded",
                                         recorded_from="test") for c in contents],
                          label="test")


def triage(category: str, urgency: str = "low") -> str:
    return json.dumps({"category": category, "urgency": urgency, "justification": "because"})
