"""Where a secret is declared, and ``runs show`` — the journal's own timeline — printing it.

Finding (seventh attack review, part three): the runtime had no notion of a secret
argument. A tool's model could type one ``SecretStr`` (pydantic masks it in the tool's
``model_dump``), and an upstream MCP tool's ``inputSchema`` could mark one ``writeOnly``
or ``format: password`` (what pydantic emits for ``SecretStr``) — nothing read either, and
``mcp proxy``'s contracts could not declare one. ``cradle-kg runs show RUN --format json``
printed every event of the run with the value: measured before the fix, 9 times for one
``set_password`` call traced to the person's request (the recorded request, the proposal,
the decision's, the intent's and the outcome's action, the trace's value and three
quotes).

Now :attr:`ToolSpec.secrets` is what the model's JSON Schema marks (``SecretStr``,
``SecretBytes``, an optional one, an upstream's ``writeOnly``/``format: password``) and
what the contract names (``ToolSpec.secret_arguments``, a proxy contract's
``secret_arguments:``); ``runs show`` prints each tool's secret arguments as the mask, and
the values the run's proposals gave them masked in any text of the page. The journal keeps
them (``audit verify``, ``journal copy`` and ``replay`` read it as written).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import types
from pydantic import BaseModel, SecretBytes, SecretStr

from cradle_kg.integrations.contracts import Contracts
from cradle_kg.integrations.proxy import ProxiedTool, input_model
from cradle_kg.records import OutcomeStatus
from cradle_kg.tools import ToolSpec
from tests.conftest import EchoOut
from tests.inprocess import run_cli
from tests.security.test_131_secret_arguments_graph import ASKED, REQUEST, _runtime, _submit

MASK = "**********"


class Login(BaseModel):
    user: str
    password: SecretStr
    certificate: SecretBytes | None = None
    note: str = ""


def _spec(model: type[BaseModel], **extra: Any) -> ToolSpec:
    from cradle_kg.records import IdempotencyClass, SideEffectClass
    return ToolSpec(id="t", version="1", input_model=model, output_model=EchoOut,
                    side_effect_class=SideEffectClass.READ_ONLY,
                    idempotency=IdempotencyClass.NATURAL, **extra)


def test_a_models_secret_types_declare_its_secrets() -> None:
    assert _spec(Login).secrets == ("certificate", "password")
    assert _spec(Login, secret_arguments=("note",)).secrets == ("certificate", "note",
                                                                "password")


def test_an_upstream_schema_and_a_proxy_contract_declare_secrets() -> None:
    schema = {"type": "object", "properties": {
        "user": {"type": "string"},
        "token": {"type": "string", "writeOnly": True},
        "pin": {"type": "string", "format": "password"},
        "api_key": {"type": "string"}}}
    contracts = Contracts.model_validate({"tools": {"login": {
        "side_effect": "read_only", "description": "logs in", "secret_arguments": ["api_key"]}}})
    # the spec names its upstream by ``source`` alone (``proxy.spec_of``): never called here
    upstream = SimpleNamespace(source="the test upstream")
    tool = ProxiedTool(upstream=upstream, name="login", tool_id="up.login",  # type: ignore[arg-type]
                       contract=contracts.tools["login"])
    # unpinned: the agent is shown the schema's grammar (test_127), which keeps the marks
    listed = types.Tool(name="login", description="logs in", inputSchema=schema)
    assert tool.spec(listed).secrets == ("api_key", "pin", "token")
    assert _spec(input_model("login", schema)).secrets == ("pin", "token")
    with pytest.raises(ValueError):
        Contracts.model_validate({"tools": {"login": {
            "side_effect": "read_only", "secret_arguments": ["{api_key}"]}}})


def test_runs_show_prints_a_secret_as_its_mask(tmp_path: Path) -> None:
    home = tmp_path / "home"
    from cradle_kg.demo.scenario import prepare_home
    prepare_home(home)
    rt, ran = _runtime(home)
    try:
        rt.record_input("run:s", REQUEST, author="user:emma")
        assert _submit(rt, 0, "set_password", {"user": "alice", "new_password": ASKED}
                       ).status is OutcomeStatus.EXECUTED
    finally:
        rt.close()
    assert ran == [ASKED]
    done = run_cli("runs", "show", "run:s", "--home", str(home), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert ASKED.lower() not in done.stdout.lower()
    shown = json.loads(done.stdout)
    received = next(e for e in shown["timeline"] if e["kind"] == "proposal.received")
    assert received["payload"]["proposal"]["action"]["arguments"] == {
        "user": "alice", "new_password": MASK}
    recorded = next(e for e in shown["timeline"] if e["kind"] == "input.recorded")
    assert MASK in json.dumps(recorded)  # the person's request, the password masked
