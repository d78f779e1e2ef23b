"""The run view's lanes show a secret as its mask, as ``runs show`` does.

Finding (ninth attack review): the page's run view (``GET /api/runs/{id}/view``) draws one
lane per proposal from the run's events, with the runtime's words on each stage — among
them the tool's error as the journal holds it (``action.observed``) and each verifier
check's detail. The journal keeps those as they were (replay serves them), and ``runs show``
masks a secret argument's value in them (``test_133``, ``test_136``), but the lanes were
drawn from the raw events: a tool that failed quoting its secret argument (``the directory
refused Hunter2-Sekret-77 for alice``) showed the password in clear to whoever reads the
run's page, where the outcome's reasons and ``runs show`` said ``**********``.

Now the lanes are drawn from the page's events as ``runs show`` shows them (the same
masks, the same bounded read of the run's secret-bearing proposals).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from cradle_kg.canonical import token_hash
from cradle_kg.config import Approver, RuntimeConfig
from cradle_kg.demo.scenario import prepare_home
from cradle_kg.loop.runtime import Runtime
from cradle_kg.packs.loader import load_pack
from cradle_kg.records import Agent, IdempotencyClass, OutcomeStatus, Permission, SideEffectClass
from cradle_kg.server.api import make_router
from cradle_kg.tools import ToolSpec
from tests.lineage.kit import AGENT, PACK, Free, verified
from tests.security.test_131_secret_arguments_graph import ASKED, SetPassword

pytestmark = pytest.mark.usefixtures("journal_backend")

PERSON = "user:bob"


def _refused(call: Any) -> Free:
    secret = call.arguments.new_password.get_secret_value()
    raise ValueError(f"the directory refused {secret} for alice")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Runtime, TestClient]]:
    home = tmp_path / "home"
    prepare_home(home)
    (home / "policies" / "all.cedar").write_text('@id("all")\npermit(principal, action, '
                                                 'resource);\n')
    config = RuntimeConfig(agents=(Agent(id=AGENT),), permissions=(Permission(subject=AGENT),),
                           approvers=(Approver(id=PERSON, token_hash=token_hash("bob")),))
    with Runtime(home, config=config, load_plugins=False, graph_sync=False) as rt:
        rt.load_pack(load_pack(PACK))
        rt.register_verifier("ok", verified(lambda: {"ok": True}))
        rt.register_tool(ToolSpec(
            id="set_password", version="1", input_model=SetPassword, output_model=Free,
            side_effect_class=SideEffectClass.REVERSIBLE,
            idempotency=IdempotencyClass.NATURAL, target_from="account:*", verifier="ok"),
            _refused)
        app = FastAPI()
        app.state.runtime = rt
        app.include_router(make_router(rt))
        with TestClient(app) as client:
            yield rt, client


def test_a_tools_error_quoting_its_secret_is_masked_in_the_lanes(
        served: tuple[Runtime, TestClient]) -> None:
    rt, client = served
    out = rt.submit({"id": "p0", "task_id": "t", "agent_id": AGENT, "run_id": "run:s",
                     "action": {"action_type": "set_password", "target": "account:x",
                                "arguments": {"user": "alice", "new_password": ASKED}}})
    assert out.status is OutcomeStatus.FAILED
    assert ASKED not in " ".join(out.reasons)  # the outcome's reasons: masked already
    answer = client.get("/api/runs/run:s/view", headers={"Authorization": "Bearer bob"})
    assert answer.status_code == 200, answer.text
    view = answer.json()
    lanes = json.dumps(view["lanes"])
    assert ASKED not in lanes, lanes
    observed = next(s for s in view["lanes"][0]["stages"] if s["stage"] == "observation")
    assert observed["state"] == "fail"
    assert observed["reasons"] == ["tool `set_password@1` raised ValueError: the directory "
                                   "refused ********** for alice"]
