"""One identity's slow calls do not hold up the other identities of ``cradle-kg serve``.

Finding (after ``test_270``, which closed it for the MCP gateway): the JSON API ran each
governed call — ``POST /api/proposals``, a workflow's start, the routes that decide or
resume a run — on a worker thread of the pool every request of the process shares
(anyio's default: 40 threads), under one lock of the whole API. A tool that takes its
time (a service that answers late) held the lock for as long as it ran, and its caller's
next calls the threads: ``agent:mallory``, with its own token, sent 45 proposals of such a
tool at once (or started 45 runs of its workflow whose step calls it), and the approver's
``GET /api/approvals``, the other agent's ``GET /api/runs`` and even ``GET /api/whoami``
waited past 20 s, until mallory's calls had ended one after the other.

Now a proposal and a workflow start run outside the API's lock (the journal guards them,
as it does another process's), and each identity's blocking calls run on threads of their
own, 8 at once (``server.threads.CALLS_PER_IDENTITY``, the gateway's bound): its next call
waits for one of its own, and no other identity waits on it. Either half alone leaves the
reads waiting (the lock; the shared pool).

A real ``cradle-kg serve`` on 127.0.0.1 over the demo home with a second agent, a pack of
the home's own whose one tool waits until the test lets it go (or 30 s), and a workflow of
mallory's whose one step calls it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cradle_kg import Runtime
from cradle_kg.config import load_config, save_config
from cradle_kg.demo.scenario import AGENT, APPROVER, DEMO_TOKENS
from cradle_kg.records import Permission
from cradle_kg.server.threads import CALLS_PER_IDENTITY, WAITING_PER_IDENTITY
from tests.conftest import TEST_POLICY
from tests.server.conftest import Server, start_server, stop_server

from .mcp_http import MALLORY, token_for, two_agent_home

SLOW_CALLS = 45
#: seconds the slow tool holds each call unless the test lets it go first
HOLD = 30

MANIFEST = """id: test.slow
name: A tool that answers late
version: 1.0.0
core_ontology: ">=0.1.0"
description: waits until `<home>/slow-release` exists, at most 30 seconds
tools:
  - tools:wait
"""
TOOLS = f'''
import time

from pydantic import BaseModel, ConfigDict

from cradle_kg.packs.sdk import IdempotencyClass, SideEffectClass, tool


class Ask(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = 0


class Answer(BaseModel):
    waited: float


@tool("test.slow.wait", input_model=Ask, output_model=Answer,
      side_effect_class=SideEffectClass.READ_ONLY, idempotency=IdempotencyClass.NATURAL,
      target_from="slow:x", description="answers late")
def wait(ctx, call):
    start = time.monotonic()
    with open(ctx.home / "slow-entered", "a") as entered:  # one line a call: the tests wait on it
        entered.write("in\\n")
    while time.monotonic() - start < {HOLD} and not (ctx.home / "slow-release").exists():
        time.sleep(0.05)
    return Answer(waited=time.monotonic() - start)
'''
FLOW = """workflow: slow
version: "1"
agent: agent:mallory
description: one tool step that answers late
input:
  type: object
  properties:
    n: {type: integer}
  required: [n]
  additionalProperties: false
steps:
  - id: wait
    kind: tool
    tool: test.slow.wait
    tools: [test.slow.wait]
    target: "slow:x"
    inputs: {n: input.n}
    input:
      type: object
      properties:
        n: {type: integer}
      required: [n]
      additionalProperties: false
    output:
      type: object
      properties:
        waited: {type: number}
      required: [waited]
"""


def slow_home(root: Path) -> Path:
    """The two agents' demo home, its own pack ``test.slow`` enabled, mallory allowed it."""
    two_agent_home(root)
    pack = root / "packs" / "test.slow"
    pack.mkdir(parents=True)
    (pack / "__init__.py").write_text("")
    (pack / "manifest.yaml").write_text(MANIFEST)
    (pack / "tools.py").write_text(TOOLS)
    (root / "policies" / "test.cedar").write_text(TEST_POLICY)
    (root / "workflows").mkdir(exist_ok=True)
    (root / "workflows" / "slow.yaml").write_text(FLOW)
    config = load_config(root / "config.json")
    save_config(root / "config.json", config.model_copy(update={
        "packs": (*config.packs, "test.slow"),
        "permissions": (*config.permissions, Permission(
            subject=MALLORY, action_type="test.slow.*", resource_selector="slow:*"))}))
    with Runtime(root) as rt:  # the journal made, the pack loaded
        assert rt.tools.has("test.slow.wait")
    return root


@contextlib.contextmanager
def serving(tmp_path: Path, files: dict[str, str] | None = None, *,
            before: Callable[[Path], None] | None = None) -> Iterator[Server]:
    """``serve`` on :func:`slow_home` with ``files`` (paths in the home: texts) added and
    ``before`` run on the home; every held call let go before it stops."""
    home = slow_home(tmp_path / "home")
    for rel, text in (files or {}).items():
        (home / rel).write_text(text)
    if before is not None:
        before(home)
    srv = start_server(["--home", str(home)], tmp_path / "serve.log", home)
    try:
        yield srv
    finally:
        (home / "slow-release").touch()  # the held calls end, the server stops at once
        stop_server(srv)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    with serving(tmp_path) as srv:
        yield srv


#: the routes by which mallory's token has the slow tool run: a path and its n-th body
WAYS = {
    "proposal": ("/api/proposals", lambda n: {
        "id": f"p-slow-{n}", "task_id": f"task-slow-{n}", "agent_id": MALLORY,
        "action": {"action_type": "test.slow.wait", "target": "slow:x",
                   "arguments": {"n": n}}}),
    "workflow start": ("/api/workflows/slow/runs", lambda n: {
        "input": {"n": n}}),
}
#: what each of mallory's calls answers once its tool has run
DONE = {"proposal": "executed", "workflow start": "completed"}


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def wait_entered(home: Path, calls: int = 1, within: float = 60) -> None:
    """Until the slow tool has been entered ``calls`` times (its calls now held there)."""
    deadline = time.monotonic() + within
    marks = home / "slow-entered"
    while not marks.exists() or len(marks.read_text().splitlines()) < calls:
        assert time.monotonic() < deadline, f"the slow tool was not reached {calls} times"
        time.sleep(0.05)


def queued_behind_held(home: Path, send: Callable[[int], None], answers: dict[int, Any],
                       lock: threading.Lock, refused: Callable[[Any], bool],
                       ) -> tuple[list[threading.Thread], range, list[int]]:
    """An identity's calls that wait for its threads: ``send(n)`` (which records its answer
    in ``answers`` under ``lock``) from ``CALLS_PER_IDENTITY`` threads held by the slow
    tool, then from as many as may wait, and one more. Once that one is refused for the
    quota (``refused(answer)``), every other one has been authenticated and waits for a
    thread. The callers, the numbers of the queued calls and those refused (one)."""
    def sent(numbers: range) -> list[threading.Thread]:
        callers = [threading.Thread(target=send, args=(n,), daemon=True) for n in numbers]
        for caller in callers:
            caller.start()
        return callers

    running = sent(range(CALLS_PER_IDENTITY))
    wait_entered(home, CALLS_PER_IDENTITY)
    extra = range(CALLS_PER_IDENTITY, CALLS_PER_IDENTITY + WAITING_PER_IDENTITY + 1)
    waiting = sent(extra)
    deadline = time.monotonic() + HOLD / 2  # well before the slow tool lets go by itself
    while time.monotonic() < deadline:
        with lock:
            if any(refused(a) for a in answers.values()):
                break
        time.sleep(0.05)
    with lock:
        quota = [n for n, a in answers.items() if refused(a)]
    assert len(quota) == 1, answers
    return [*running, *waiting], extra, quota


def served_while_held(served: Server, path: str, reads: tuple[str, ...] = ("/api/runs",),
                      body: dict[str, Any] | None = None) -> httpx.Response:
    """An approver's ``POST path`` that walks into the slow tool, sent from a thread; while
    it is held, the other agent's ``reads`` answer within 5 s (before the fixes: once the
    tool had answered, 30 s); then the tool is let go: the approver's answer."""
    assert served.home is not None
    answers: list[httpx.Response] = []

    def post() -> None:
        answers.append(httpx.post(served.url + path, json=body, timeout=120,
                                  headers=_bearer(DEMO_TOKENS[APPROVER])))

    person = threading.Thread(target=post, daemon=True)
    person.start()
    wait_entered(served.home)  # the walk reached the slow step: its tool holds the call
    agent = _bearer(token_for(served.home, AGENT))
    for read in reads:
        begun = time.monotonic()
        answer = httpx.get(served.url + read, headers=agent, timeout=20)
        took = time.monotonic() - begun
        assert answer.status_code == 200, answer.text
        assert not answers, (read, took)  # answered while the tool still runs
        assert took < 5, (read, took)
    (served.home / "slow-release").touch()
    person.join(60)
    assert answers and answers[0].status_code == 200, answers
    return answers[0]


@pytest.mark.parametrize("way", WAYS)
def test_an_identity_s_slow_calls_leave_the_others_served(served: Server, way: str) -> None:
    assert served.home is not None
    path, body = WAYS[way]
    mallory = _bearer(token_for(served.home, MALLORY))
    started = threading.Barrier(SLOW_CALLS + 1)
    ended: list[tuple[int, str]] = []

    def slow(n: int) -> None:
        started.wait()
        with contextlib.suppress(httpx.HTTPError):
            answer = httpx.post(served.url + path, json=body(n), headers=mallory,
                                timeout=HOLD * SLOW_CALLS)
            ended.append((answer.status_code, str(answer.json().get("status"))))

    callers = [threading.Thread(target=slow, args=(n,), daemon=True)
               for n in range(SLOW_CALLS)]
    for caller in callers:
        caller.start()
    started.wait()
    time.sleep(3)  # mallory's calls reach the server and hold its tool
    with httpx.Client(base_url=served.url, timeout=20) as client:
        approver = _bearer(DEMO_TOKENS[APPROVER])
        agent = _bearer(token_for(served.home, AGENT))
        for read, who in (("/api/approvals?pending=true", approver), ("/api/runs", agent),
                          ("/api/whoami", agent)):
            begun = time.monotonic()
            answer = client.get(read, headers=who)
            took = time.monotonic() - begun
            assert answer.status_code == 200, answer.text
            # answered while every slow call still waits on its tool; before: once
            # mallory's calls had ended, one after the other
            assert not ended, (read, len(ended), took)
            # well within one held call (HOLD): a read served behind mallory's would wait
            # for them (5 s was passed at load 10 in a PostgreSQL suite run: 6.8 s)
            assert took < HOLD * 2 / 3, (read, took)
    (served.home / "slow-release").touch()
    for caller in callers:
        caller.join(HOLD * 2)
    # held, not refused: each ran once let go
    assert ended == [(200, DONE[way])] * SLOW_CALLS
