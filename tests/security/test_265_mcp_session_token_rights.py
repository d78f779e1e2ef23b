"""Over MCP's HTTP transport, each call has the rights of the token it comes with.

Finding: the gateway read a call's token with the SDK's ``get_access_token()``, a context
variable set by the HTTP request — but a session's calls run in tasks the SDK starts from
the request that *opened* the session, so every call of a session was judged by the token
of its ``initialize``. The SDK lets a session go on with another token of the same agent
(it binds a session to the agent's id, not to the token), and an agent holds one token at
a time: the operator who took the host's word from a client — ``api-token issue AGENT``
without ``--host``, which replaces the host's token — left the client's open session with
the host's rights. Sent with the new agent token, its calls still asserted
``cradle-kg/facts`` (journaled as the host's, a trusted origin: ``test_68``'s laundering,
and the transfer to the injected IBAN executed unattended); the other way round, the
host's new token could not assert them in a session the agent's had opened. Now the
rights and the identity of a call are read from the HTTP request that carries it (the
SDK hands each message its request): the agent's token asserts no host key, whichever
token opened the session.

A real ``cradle-kg mcp serve --transport streamable-http`` on a home with
``security.lineage`` and the lineage tests' mailbox pack.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .mcp_http import Client, Served, serve, token_for
from .test_59_agent_host_facts import AGENT
from .test_59_agent_host_facts import _home as mail_home
from .test_68_mcp_http_host_keys import _events, _iban_fact, _pay


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(mail_home(tmp_path / "home"))


def test_a_session_opened_by_the_host_s_token_has_no_host_rights_with_the_agent_s(
        served: Served) -> None:
    client = Client(served.url, token_for(served.home, AGENT, host=True))
    # the operator takes the host's word from the client: its token is now the agent's
    agent_token = token_for(served.home, AGENT)
    client.headers = {**client.headers, "Authorization": f"Bearer {agent_token}"}
    run = "run:downgraded"
    read = client.call("read_email", {}, {"cradle-kg/run": run,
                                          "cradle-kg/facts": [_iban_fact()]})["result"]
    # before: `executed`, the IBAN journaled as the host's fact
    assert read["_meta"]["cradle-kg/status"] == "refused", read
    assert "`cradle-kg/facts`" in read["content"][0]["text"]
    assert _events(served, run) == []
    assert client.call("read_email", {}, {"cradle-kg/run": run}
                       )["result"]["_meta"]["cradle-kg/status"] == "executed"
    pay = _pay(client, run)  # before: `executed`, unattended
    assert pay["_meta"]["cradle-kg/status"] == "awaiting_approval", pay


def test_a_session_opened_by_the_agent_s_token_takes_the_host_s_word_from_the_host(
        served: Served) -> None:
    client = Client(served.url, token_for(served.home, AGENT))
    host_token = token_for(served.home, AGENT, host=True)
    client.headers = {**client.headers, "Authorization": f"Bearer {host_token}"}
    run = "run:upgraded"
    read = client.call("read_email", {}, {"cradle-kg/run": run,
                                          "cradle-kg/facts": [_iban_fact()]})["result"]
    assert read["_meta"]["cradle-kg/status"] == "executed", read
    [received] = [e for e in _events(served, run) if e.kind == "proposal.received"]
    [fact] = received.payload["proposal"]["facts"]
    assert fact["source"].startswith("host:"), fact

