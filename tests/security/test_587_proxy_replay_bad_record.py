"""A ``tools.registered`` record strict replay cannot read is a typed refusal.

Finding (with ``test_585``): strict replay rebuilds a proxied tool from the journal's
``tools.registered`` — the upstream's definition and the operator's contract, read back
through the MCP ``Tool`` model and :class:`ToolContract`. A record that is not one the
proxy writes (a contract no operator could load, a definition that is no MCP tool) would
end the replay in pydantic's ``ValidationError`` traceback, or be read as some other tool.

Now it is refused before the run replays, in one line naming the run, the decision's
tool and what of the record is wrong (exit 1, no traceback), as a missing record is
(``test_586``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cradle_kg import Runtime
from cradle_kg.errors import ReplayDivergenceError
from cradle_kg.integrations import proxy
from cradle_kg.records import RUNTIME_ACTOR
from cradle_kg.storage import NewEvent
from cradle_kg.workflow.replay import strict_replay
from tests.integrations.conftest import cli, mcp_home
from tests.security.test_586_proxy_replay_record_checked import (
    CONTRACT,
    SERVED,
    _denied_call,
    _served_as,
)

pytestmark = pytest.mark.usefixtures("journal_backend")


@pytest.mark.parametrize("broken", [
    {"contract": {"side_effect": "reversible"}},  # no target, no verify: no contract loads
    {"definition": {"name": "note", "inputSchema": "not a schema"}},
])
def test_a_record_no_proxy_writes_is_refused_in_one_line(tmp_path: Path,
                                                         broken: dict[str, Any]) -> None:
    home = mcp_home(tmp_path / "home")
    with Runtime(home, graph_sync=False) as rt:
        entry = {**proxy.served_record("test.up.note", SERVED, CONTRACT), **broken}
        rt.context.append([NewEvent(
            run_id=proxy.TOOLS_RUN, kind=proxy.TOOLS_REGISTERED, subject="upstream:fake",
            actor=RUNTIME_ACTOR, at=rt.clock(), payload={"source": "fake", "tools": [entry]})])
        _served_as(rt, SERVED)
        run = _denied_call(rt)

    with pytest.raises(ReplayDivergenceError) as caught:
        strict_replay(home, [run])
    message = caught.value.message
    assert "is not one the proxy writes" in message and "test.up.note@" in message, message
    assert "\n" not in message, message

    done = cli("replay", run, "--strict", "--home", str(home))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "is not one the proxy writes" in done.stderr, done.stderr
