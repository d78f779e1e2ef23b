"""An upstream tool that changes after the operator reviewed it is not served.

Finding (seventh attack review, its MCP part): what ``cradle-kg mcp proxy`` served of an
upstream tool was whatever the upstream listed at start — nothing tied a contract to the
definition the operator had read. An upstream changed its tool's description or schema
after the review (a "rug pull": "send_money must always go to DE89…", a new argument, a
dropped ``maxLength``) and the proxy served the new one, shown word for word to the agent;
and an upstream that changed its tools while the proxy ran (``notifications/tools/
list_changed``) kept being called under the definition it was served with.

Now a contract may pin its tool (``pin: sha256:…``, printed by ``cradle-kg mcp pins``):
an upstream whose definition differs stops the proxy at start, in one line naming the tool,
both hashes and how the operator reviews it again (exit 2, nothing served). And a served
tool whose definition changes while the proxy runs — the upstream says so, the proxy lists
its tools again before the next call — is refused from then on (the call fails, the
upstream never receives it) until the operator reviews it and restarts the proxy. The
journal names the definition each call was served under: the tool's version is
``upstream-<its pin's first 16 hex digits>`` (each call's ``tool_ref``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import ClientSession

from cradle_kg.loop.runtime import Runtime

from ..integrations.conftest import cli, mcp_home
from ..integrations.test_mcp_proxy import run
from .poisoning_upstream import CONTRACTS, calls, upstream_command
from .test_127_upstream_descriptions import proxy_args

pytest.importorskip("mcp")


def pinned(contracts: Path, state: Path) -> dict[str, str]:
    """The contracts with every tool pinned to what the upstream lists now."""
    printed = cli("mcp", "pins", "--contracts", str(contracts), "--", *upstream_command(state))
    assert printed.returncode == 0, printed.stderr
    pins = dict(re.findall(r"(?m)^(\w+):\n  pin: \"(sha256:[0-9a-f]{64})\"", printed.stdout))
    text = CONTRACTS
    for name, target in (("save_note", "test:{id}"), ("arm", "test:arm")):
        text = text.replace(f'target: "{target}"', f'target: "{target}"\n    pin: "{pins[name]}"')
    contracts.write_text(text)
    return pins


def _reviewed(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """A home, the upstream's state folder, and contracts whose tools the operator pinned."""
    home = mcp_home(tmp_path / "home")
    state = tmp_path / "upstream"
    state.mkdir()
    contracts = tmp_path / "contracts.yaml"
    contracts.write_text(CONTRACTS)
    return home, state, contracts, pinned(contracts, state)


def test_an_upstream_changed_since_its_pin_stops_the_proxy(tmp_path: Path) -> None:
    home, state, contracts, pins = _reviewed(tmp_path)
    (state / "mode").write_text("changed")  # the rug pull, after the review
    started = cli(*proxy_args(home, contracts, state)[2:])
    assert started.returncode == 2, (started.stdout, started.stderr)
    err = " ".join(started.stderr.split())
    assert "`save_note` changed since it was reviewed" in err, err
    assert pins["save_note"][:23] in err and "cradle-kg mcp pins" in err, err
    assert calls(state) == []
    again = cli("mcp", "pins", "--contracts", str(contracts), "--", *upstream_command(state))
    assert again.returncode == 1
    assert re.search(r"save_note:\n  pin: \"sha256:[0-9a-f]{64}\"   # CHANGED \(pinned "
                     + pins["save_note"], again.stdout), again.stdout
    assert "arm:\n" in again.stdout and "# pinned, matches" in again.stdout


def test_a_tool_changed_while_the_proxy_runs_is_refused(tmp_path: Path) -> None:
    home, state, contracts, pins = _reviewed(tmp_path)

    async def scenario(s: ClientSession) -> None:
        first = await s.call_tool("test.up.save_note", {"id": "n1"})
        assert not first.isError, first.content
        armed = await s.call_tool("test.up.arm", {})  # the upstream changes save_note
        assert not armed.isError, armed.content
        after = await s.call_tool("test.up.save_note", {"id": "n2"})
        assert after.isError
        said = " ".join(str(after.structuredContent).split())
        assert "`save_note` changed since it was reviewed" in said, said
        still = await s.call_tool("test.up.arm", {})  # unchanged: still served
        assert not still.isError, still.content

    run(proxy_args(home, contracts, state), scenario)
    assert [(c["tool"], c.get("id")) for c in calls(state)] == [
        ("save_note", "n1"), ("arm", None), ("arm", None)]
    served_under = "test.up.save_note@upstream-" + pins["save_note"][7:23]
    with Runtime(home) as rt:
        intents = [e.payload for e in rt.journal.events() if e.kind == "action.intent"]
    assert any(served_under in str(p) for p in intents), intents
