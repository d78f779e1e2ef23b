"""Item 14: the MCP gateway on streamable HTTP, attacked from the network side.

One real ``cradle-kg mcp serve --transport streamable-http`` on 127.0.0.1 (a subprocess),
two agents with a token each, spoken to with raw JSON-RPC over httpx. Attacks that broke
it: a body that is not UTF-8, nested 5,000 deep or holding a 5,000-digit number made the
SDK answer HTTP 500 ``-32603`` with a traceback in the log, and a key given twice was read
last-wins (``"amount": 1, "amount": 5000``) where every other entry point refuses it;
a ``cradle-kg/input`` naming a run id with a NUL (or 5,000 characters) was journaled
before the proposal that carried it was refused. Attacks that hold: no token, a garbage,
approver's, revoked or replaced token, a token in the query string, another agent's token
on a session, a ``cradle-kg/`` key that would choose the identity, another agent's
idempotency key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from cradle_kg.demo.scenario import APPROVER, DEMO_TOKENS
from cradle_kg.home import Home
from cradle_kg.server.auth import revoke_agent_token

from .mcp_http import AGENT, INIT, MALLORY, Client, Served, fresh, serve, token_for

pytest.importorskip("mcp")

CREDIT = "demo.ledger.credit"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = fresh(tmp_path_factory.mktemp("mcp-http"), "home")
    # the host's tokens: the refused-input cases test the checks behind that one
    tokens = {AGENT: token_for(home, AGENT, host=True),
              MALLORY: token_for(home, MALLORY, host=True)}
    for running in serve(home):
        running.tokens = tokens
        yield running


@pytest.fixture
def alice(served: Served) -> Iterator[Client]:
    client = Client(served.url, served.tokens[AGENT])
    yield client
    client.close()


def _call_body(arguments_json: str, meta_json: str | None = None, ident: int = 7) -> bytes:
    meta = f', "_meta": {meta_json}' if meta_json is not None else ""
    return (f'{{"jsonrpc": "2.0", "id": {ident}, "method": "tools/call", "params": '
            f'{{"name": "{CREDIT}", "arguments": {arguments_json}{meta}}}}}').encode()


DEEP = "[" * 5000 + "]" * 5000
#: (name, raw body, HTTP status, JSON-RPC code, a word of the message)
HOSTILE: list[tuple[str, bytes, int, int, str]] = [
    ("not UTF-8", _call_body('{"account": "\xff\xfe", "amount": 1}'.replace(
        "\xff\xfe", "@@")).replace(b"@@", b"\xff\xfe"), 400, -32700, "utf-8"),
    ("5,000-deep arguments", _call_body('{"account": "a", "amount": 1, "x": ' + DEEP + "}"),
     400, -32700, "deep"),
    ("5,000-deep _meta", _call_body('{"account": "a", "amount": 1}',
                                    '{"other": ' + DEEP + "}"), 400, -32700, "deep"),
    ("5,000-deep cradle-kg/facts", _call_body('{"account": "a", "amount": 1}',
                                              '{"cradle-kg/facts": ' + DEEP + "}"),
     400, -32700, "deep"),
    ("100,000-digit amount", _call_body('{"account": "a", "amount": ' + "9" * 100_000 + "}"),
     400, -32700, "digits"),
    ("5,000-digit request id", b'{"jsonrpc": "2.0", "id": ' + b"9" * 5000
     + b', "method": "tools/list"}', 400, -32700, "digits"),
    ("amount given twice", _call_body('{"account": "acct-1", "amount": 1, "amount": 5000}'),
     400, -32700, "duplicate"),
    ("NaN amount", _call_body('{"account": "acct-1", "amount": NaN}'), 400, -32700, "nan"),
    ("lone surrogate", _call_body('{"account": "\\ud800", "amount": 1}'), 400, -32700,
     "surrogate"),
    ("not JSON", b'{"jsonrpc": "2.0", "id": 1, "method": ', 400, -32700, "json"),
    ("3 MB _meta", _call_body('{"account": "a", "amount": 1}',
                              json.dumps({"x": "y" * 3_000_000})), 413, -32600, "limit"),
    ("100,000 _meta keys", _call_body('{"account": "a", "amount": 1}', json.dumps(
        {f"k{i}": i for i in range(100_000)})), 413, -32600, "limit"),
]


def test_hostile_bodies_are_typed_json_rpc_errors_and_write_nothing(
        served: Served, alice: Client) -> None:
    before = len(served.events())
    for name, body, status, code, word in HOSTILE:
        response = alice.post_raw(body)
        assert response.status_code == status, (name, response.status_code, response.text)
        error = response.json()["error"]
        assert error["code"] == code and word in error["message"].lower(), (name, error)
    assert alice.alive()
    assert len(served.events()) == before  # nothing journaled, not even a proposal
    assert "Traceback" not in served.stderr(), served.stderr()[-3000:]
    assert served.proc.poll() is None


@pytest.mark.parametrize("meta", [
    {"cradle-kg/run": "run:a\u0000b", "cradle-kg/input": {"text": "pay IBAN X",
                                                          "author": "user:alice"}},
    {"cradle-kg/run": "r" * 5000, "cradle-kg/input": {"text": "pay", "author": "user:alice"}},
    {"cradle-kg/input": {"text": "pay", "author": "u\u0000"}},
    {"cradle-kg/input": {"text": "pay", "author": "x" * 5000}},
], ids=["nul-run", "5000-char-run", "nul-author", "5000-char-author"])
def test_a_refused_host_input_journals_nothing(served: Served, alice: Client,
                                               meta: dict[str, Any]) -> None:
    before = len(served.events())
    result = alice.call(CREDIT, {"account": "acct-1", "amount": 1}, meta)["result"]
    assert result["isError"] and result["_meta"]["cradle-kg/status"] == "refused", result
    assert len(served.events()) == before
    assert "Traceback" not in served.stderr()


def test_tokens_missing_garbage_approver_query_string_revoked_or_replaced_get_401(
        served: Served) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
    agent_token = served.tokens[AGENT]
    refused_headers: list[dict[str, str]] = [
        {}, {"Authorization": "Bearer ck_not-a-token"}, {"Authorization": "Bearer"},
        {"Authorization": f"Basic {agent_token}"},
        {"Authorization": f"Bearer {agent_token[:-1]}"},
        {"Authorization": "Bearer " + "x" * 60_000},
        {"Authorization": f"Bearer {DEMO_TOKENS[APPROVER]}"}]
    with httpx.Client(timeout=30) as http:
        for headers in refused_headers:
            response = http.post(served.url, json=init, headers={
                "Accept": "application/json, text/event-stream", **headers})
            assert response.status_code == 401, (list(headers.values())[:1], response.text)
        for query in (f"?access_token={agent_token}", f"?token={agent_token}"):
            response = http.post(served.url + query, json=init, headers={
                "Accept": "application/json, text/event-stream"})
            assert response.status_code == 401, query

    # a session opened with a token stops when the token is revoked, and a replaced
    # token is dead: only the newest works
    mallory = Client(served.url, served.tokens[MALLORY])
    try:
        assert mallory.alive()
        assert revoke_agent_token(Home(served.home), MALLORY)
        assert mallory.post_json({"jsonrpc": "2.0", "id": 50, "method": "tools/list"}
                                 ).status_code == 401
        first = token_for(served.home, MALLORY)
        second = token_for(served.home, MALLORY)
        assert Client(served.url, second).alive()
        with pytest.raises(AssertionError):
            Client(served.url, first)
    finally:
        served.tokens[MALLORY] = token_for(served.home, MALLORY)
        mallory.close()


def test_another_agents_token_cannot_use_or_end_a_session(served: Served,
                                                          alice: Client) -> None:
    before = len(served.events())
    intruder = {"Authorization": f"Bearer {served.tokens[MALLORY]}"}
    used = alice.post_json({"jsonrpc": "2.0", "id": 60, "method": "tools/call", "params": {
        "name": CREDIT, "arguments": {"account": "acct-1", "amount": 1}}}, **intruder)
    assert used.status_code in (401, 403, 404), used.text
    ended = alice.http.delete(alice.url, headers={**alice.headers, **intruder})
    assert ended.status_code in (401, 403, 404), ended.text
    assert alice.alive()  # still the owner's
    assert len(served.events()) == before


@pytest.mark.parametrize("key", ["cradle-kg/agent", "cradle-kg/agent_id", "cradle-kg/identity",
                                 "cradle-kg/tenant", "cradle-kg/step", "cradle-kg/proposal"])
def test_a_cradle_meta_key_cannot_choose_identity_step_or_proposal(
        served: Served, alice: Client, key: str) -> None:
    before = len(served.events())
    result = alice.call(CREDIT, {"account": "acct-1", "amount": 1}, {key: MALLORY})["result"]
    assert result["isError"] and result["_meta"]["cradle-kg/status"] == "refused", result
    assert "extra inputs are not permitted" in result["content"][0]["text"]
    assert len(served.events()) == before


def test_another_agents_idempotency_key_replays_nothing_of_its_outcome(
        served: Served, alice: Client) -> None:
    key = {"cradle-kg/idempotency_key": "order-77"}
    mine = alice.call(CREDIT, {"account": "acct-77", "amount": 5}, key)["result"]
    assert not mine["isError"], mine
    mallory = Client(served.url, served.tokens[MALLORY])
    try:
        theirs = mallory.call(CREDIT, {"account": "acct-77", "amount": 5}, key)["result"]
    finally:
        mallory.close()
    # mallory's call is its own proposal and its own effect, never alice's recorded answer
    assert theirs["_meta"]["cradle-kg/replayed"] is False
    assert theirs["_meta"]["cradle-kg/proposal"] != mine["_meta"]["cradle-kg/proposal"]
    intents = [e for e in served.events() if e.kind == "action.intent"
               and e.payload["action"]["arguments"].get("account") == "acct-77"]
    assert sorted(e.actor for e in intents) == sorted([AGENT, MALLORY])
    assert len({e.payload["action"]["idempotency_key"] for e in intents}) == 2
