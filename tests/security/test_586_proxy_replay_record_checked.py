"""Strict replay rebuilds a proxied tool only from the record that matches its decisions.

Finding (with ``test_585``): strict replay rebuilds each tool ``mcp proxy`` served from
the journal's ``tools.registered``. A record that says another tool than the one that
decided — its definition or contract is not the one the decision's ``tool_ref``
names — must not be used to decide the run again: the replay would judge the record by a
tool that never ran. A proxy's journal written before the record (or a host's
``register_tool``) says nothing of the tool at all.

Now the spec is rebuilt by the proxy's own code (``proxy.spec_of``), its ref compared
with each decision's ``tool_ref`` before the run replays: another version is a typed
refusal naming both, as is a record missing (``test_580``'s line) or one the proxy never
writes (``test_587``). A record that matches replays the run (here a call denied).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import types

from cradle_kg import Runtime
from cradle_kg.demo.scenario import AGENT
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.integrations import proxy
from cradle_kg.integrations.contracts import Contracts, ToolContract
from cradle_kg.records import RUNTIME_ACTOR, OutcomeStatus, Proposal, SideEffectClass
from cradle_kg.storage import NewEvent
from cradle_kg.workflow.replay import strict_replay
from tests.integrations.conftest import cli, mcp_home

pytestmark = pytest.mark.usefixtures("journal_backend")

SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
SERVED = types.Tool(name="note", description="notes", inputSchema=SCHEMA)
OTHER = types.Tool(name="note", description="notes, another", inputSchema=SCHEMA)
#: a read on `other:…`, which the agent holds no permission for: the call is denied
CONTRACT = ToolContract(side_effect=SideEffectClass.READ_ONLY, target="other:{id}")


def _denied_call(rt: Runtime) -> str:
    out = rt.submit(Proposal.model_validate({
        "id": "p-note", "task_id": "t-note", "agent_id": AGENT,
        "action": {"action_type": "test.up.note", "target": "other:n1",
                   "arguments": {"id": "n1"}}}))
    assert out.status is OutcomeStatus.DENIED, out.reasons
    return out.run_id


def _recorded(rt: Runtime, tool: types.Tool) -> None:
    rt.context.append([NewEvent(
        run_id=proxy.TOOLS_RUN, kind=proxy.TOOLS_REGISTERED, subject="upstream:fake",
        actor=RUNTIME_ACTOR, at=rt.clock(),
        payload={"source": "fake", "tools": [proxy.served_record("test.up.note", tool,
                                                                 CONTRACT)]})])


def _served_as(rt: Runtime, tool: types.Tool) -> None:
    """The tool registered as the proxy registers it, under ``tool``'s definition."""
    rt.register_tool(proxy.spec_of("test.up.note", CONTRACT, tool, "fake"),
                     lambda call: {"text": "never"})


def test_the_record_the_proxy_writes_replays_the_run(tmp_path: Path) -> None:
    home = mcp_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        upstream = proxy.Upstream(object(), "fake")  # type: ignore[arg-type]
        proxy.register(rt, upstream, [SERVED], Contracts(tools={"note": CONTRACT}),
                       prefix="test.up.", allow_undeclared_read=False)
        run = _denied_call(rt)
    assert strict_replay(home, [run]).runs == [run]


def test_a_record_of_another_definition_is_refused(tmp_path: Path) -> None:
    home = mcp_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        _recorded(rt, OTHER)  # the record says `OTHER`; `SERVED` decided
        _served_as(rt, SERVED)
        run = _denied_call(rt)
    served = proxy.spec_of("test.up.note", CONTRACT, SERVED, "fake").ref
    said = proxy.spec_of("test.up.note", CONTRACT, OTHER, "fake").ref
    assert served != said

    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(home, [run])
    message = caught.value.message
    # before the check: the run was decided again under `OTHER`'s spec
    assert f"`{served}`" in message and f"makes `{said}`" in message, message
    assert "diverges" not in message, message

    done = cli("replay", run, "--strict", "--home", str(home))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and f"makes `{said}`" in done.stderr, done.stderr


def test_a_journal_without_the_record_keeps_the_refusal(tmp_path: Path) -> None:
    home = mcp_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        _served_as(rt, SERVED)  # a proxy before `tools.registered`
        run = _denied_call(rt)
    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(home, [run])
    message = caught.value.message
    assert "no installed pack" in message and "records no definition" in message, message
